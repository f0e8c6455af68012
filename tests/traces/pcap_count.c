// SPDX-License-Identifier: BSD-2-Clause
/*
 * pcap_count FILE: reads a pcap or pcapng file back through libpcap (as
 * tcpdump and most tools do) and prints "packets N linktype L". Exit 0 when
 * every packet was read, 1 on any libpcap error (a file libpcap cannot open or
 * a damaged block), 2 usage.
 */
#include <pcap/pcap.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const unsigned char *data;
	unsigned long n = 0;
	pcap_t *p;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: pcap_count FILE\n");
		return 2;
	}
	p = pcap_open_offline(argv[1], err);
	if (!p) {
		fprintf(stderr, "pcap_count: %s: %s\n", argv[1], err);
		return 1;
	}
	while ((r = pcap_next_ex(p, &h, &data)) == 1) {
		if (h->caplen > h->len) {
			fprintf(stderr, "pcap_count: packet %lu: caplen %u > len %u\n", n + 1,
				h->caplen, h->len);
			pcap_close(p);
			return 1;
		}
		n++;
	}
	if (r != PCAP_ERROR_BREAK) {
		fprintf(stderr, "pcap_count: %s: after %lu packets: %s\n", argv[1], n,
			pcap_geterr(p));
		pcap_close(p);
		return 1;
	}
	printf("packets %lu linktype %d\n", n, pcap_datalink(p));
	pcap_close(p);
	return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * BPF-only: loopback TCP payload captured once when both ends are traced
 * (bpf/ABI.md, "TWIN"). A connection opened by connect()/accept() during the
 * capture is registered here under its 4-tuple; its egress positions and the
 * peer's ingress positions then both count from the stream's first byte.
 * Each end notes, per direction in its conn_state, up to where the bytes
 * it moved are in the file whole (twin_end) and where its last incomplete
 * message ended (twin_hole). A send or receive on a registered connection
 * whose mirrored tuple names a registered peer that already has the first
 * bytes of the call whole (the peer's program ran first) emits those as one
 * TWIN chunk without payload and captures the rest as usual. Included by reel_trace.bpf.c after struct conn_state and conns.
 */
#ifndef REEL_TWIN_BPF_H
#define REEL_TWIN_BPF_H

/* 1: receives covered by a traced peer's egress go as TWIN chunks
 * (reelcap --no-twin sets 0) */
const volatile __u8 twin_on = 1;

/* A TCP socket's endpoints, addresses in IPv6 form (IPv4 as ::ffff:a.b.c.d,
 * so a dual-stack socket and an AF_INET one pair), ports in network order,
 * and its network namespace. */
struct twin_key {
	__u8 laddr[16];
	__u8 raddr[16];
	__u32 netns;
	__u16 lport;
	__u16 rport;
};

/* The conns entry of the socket registered under a twin_key. */
struct twin_ref {
	__u64 key; /* conns key: tgid << 32 | fd */
	__u64 ino; /* its generation */
};

/* LRU: an entry whose socket is gone no longer matches its conns entry
 * (deleted at close, or another generation), and a new connection with the
 * same tuple replaces it at its connect/accept. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct twin_key);
	__type(value, struct twin_ref);
} twins SEC(".maps");

static __always_inline void twin_addr(struct sock *sk, __u8 family, bool remote, __u8 *out)
{
	__u32 a;

	if (family == R_AF_INET6) {
		if (remote)
			BPF_CORE_READ_INTO((struct in6_addr *)out, sk, __sk_common.skc_v6_daddr);
		else
			BPF_CORE_READ_INTO((struct in6_addr *)out, sk,
					   __sk_common.skc_v6_rcv_saddr);
		return;
	}
	a = remote ? BPF_CORE_READ(sk, __sk_common.skc_daddr)
		   : BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	__builtin_memset(out, 0, 10);
	out[10] = 0xff;
	out[11] = 0xff;
	__builtin_memcpy(out + 12, &a, 4);
}

/* The key of a socket (`mirror`: the key its peer registered under). */
static __always_inline void twin_key_of(const struct sock_info *si, bool mirror, struct twin_key *k)
{
	struct sock *sk = (struct sock *)si->sk;
	__u16 lport, rport;

	__builtin_memset(k, 0, sizeof(*k));
	twin_addr(sk, si->family, mirror, k->laddr);
	twin_addr(sk, si->family, !mirror, k->raddr);
	sock_ports(si->sk, &lport, &rport);
	k->lport = mirror ? rport : lport;
	k->rport = mirror ? lport : rport;
	k->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

/* A TCP connection opened by connect/accept during the capture: both ends'
 * positions start at the stream's first byte. */
static __always_inline bool twin_eligible(const struct sock_info *si, __u8 role)
{
	return twin_on && !snaplen && si->l4 == REEL_L4_TCP && role != REEL_ROLE_UNKNOWN;
}

static __always_inline void twin_register(__u64 key, const struct sock_info *si)
{
	struct twin_key k;
	struct twin_ref r = {.key = key, .ino = si->ino};

	twin_key_of(si, false, &k);
	bpf_map_update_elem(&twins, &k, &r, BPF_ANY);
}

/* After this end emitted [pos, pos + len) in `dir` (`whole`: every byte is
 * in the file, its chunks or its peer's). Messages end to end extend
 * twin_end; an incomplete one, or one that does not follow the last
 * (another path moved bytes in between: io_uring, sendmmsg/recvmmsg, a
 * concurrent caller), moves twin_hole past it. */
static __always_inline void twin_moved(struct conn_state *c, __u8 dir, __u64 pos, __u64 len,
				       bool whole)
{
	__u64 end = pos + len;
	__u64 *te = &c->twin_end[dir & 1];
	__u64 *th = &c->twin_hole[dir & 1];

	if (!c->twin)
		return;
	if (__sync_val_compare_and_swap(te, pos, end) == pos) {
		if (!whole)
			*th = end;
		return;
	}
	if (*th < end)
		*th = end;
	if (*te < end)
		*te = end;
}

/* The conns entry of c's registered peer, or NULL. The first lookup goes
 * through the mirrored tuple (twin_key_of: ~10 kernel reads, a 40-byte
 * hash); once found, the peer's conns key and generation are kept in c, so
 * each later call costs one conns lookup. A TCP connection has one peer
 * socket for its life: a peer that closed no longer matches its
 * generation. */
static __always_inline struct conn_state *twin_peer(struct conn_state *c,
						    const struct sock_info *si)
{
	struct twin_key k;
	struct twin_ref *r;
	struct conn_state *p;
	__u64 key, ino = c->twin_peer_ino;

	if (ino) {
		key = c->twin_peer;
		p = bpf_map_lookup_elem(&conns, &key);
		return p && p->ino == ino && p->twin ? p : NULL;
	}
	twin_key_of(si, true, &k);
	r = bpf_map_lookup_elem(&twins, &k);
	if (!r) {
		/* Bytes received: the peer is past its connect/accept, where
		 * a traced peer registers. None did, so none will: no more
		 * lookups for this connection (its server-only capture pays
		 * none of twin's cost from here). */
		if (c->pos[REEL_DIR_INGRESS & 1])
			c->twin = 0;
		return NULL;
	}
	key = r->key;
	ino = r->ino;
	p = bpf_map_lookup_elem(&conns, &key);
	if (!p || p->ino != ino || !p->twin)
		return NULL;
	/* the key before the generation that marks it valid; a reader that
	 * sees them torn looks up a key whose generation differs: no cover */
	c->twin_peer = key;
	barrier();
	c->twin_peer_ino = ino;
	return p;
}

/* How many bytes at the start of [pos, pos + len), which this registered
 * connection c moved in `dir`, its peer moved the other way and has whole in
 * the file (0 when it has not, or is not traced from its start). Whichever
 * end's program runs second leaves out what the first one captured. */
static __always_inline __u64 twin_covered(struct conn_state *c, const struct sock_info *si,
					  __u8 dir, __u64 pos, __u64 len)
{
	struct conn_state *p = twin_peer(c, si);
	__u64 end;

	if (!p)
		return 0;
	end = p->twin_end[(dir ^ 1) & 1];
	if (p->twin_hole[(dir ^ 1) & 1] > pos || end <= pos)
		return 0;
	return end - pos < len ? end - pos : len;
}

#endif /* REEL_TWIN_BPF_H */

#!/usr/bin/env bash
# Installs the Debian packages reel needs when they are missing.
#   tools/deps.sh build   toolchain and libraries (default)
#   tools/deps.sh test    + real peers and reference tools the test suite uses
# Runs apt-get update first whenever it has something to install.
set -euo pipefail

want=(build-essential cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
	libcapstone-dev libzstd-dev zstd libpcap-dev libnghttp2-dev libcmocka-dev)
case "${1:-build}" in
build) ;;
demo) want+=(curl python3 tshark) ;;
test) want+=(curl python3 tshark nginx-light redis-server redis-tools postgresql dnsmasq
	bind9-dnsutils openssl wrk tcpdump linux-perf valgrind nodejs npm libclang-rt-14-dev
	iproute2 util-linux liburing-dev golang-go gnutls-bin android-libboringssl-dev libssl-dev) ;;
*) echo "usage: $0 [build|demo|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	# node may come from outside Debian: accept any working `node`.
	if [ "$p" = nodejs ] && command -v node >/dev/null 2>&1; then continue; fi
	# npm (har-validator for the HAR test) likewise, when it came with node
	if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

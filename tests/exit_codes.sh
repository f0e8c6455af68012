#!/bin/sh
# exit_codes.sh REELCAP REELPLAY REELTOOL DATADIR TRACE [--reelcap-output]
#
# The exit-code table of README.md ("Exit status"), one program's error path
# at a time: each line runs a command and compares its exit status with the
# table's. The capture paths need no BPF (they fail before it loads, or are
# run as nobody, where loading fails). --reelcap-output checks the row that
# needs root (reelcap checks its capabilities before it creates the file).
set -u
reelcap=$1 reelplay=$2 reeltool=$3 data=$4 trace=$5 mode=${6:-}
work=$(mktemp -d /tmp/reel-exit-XXXXXX)
chmod 755 "$work"
fails=0 checks=0

# expect STATUS LABEL CMD...: CMD's exit status is STATUS (its stderr in work)
expect() {
	want=$1 label=$2
	shift 2
	"$@" >"$work/out" 2>"$work/err" </dev/null
	got=$?
	checks=$((checks + 1))
	if [ "$got" != "$want" ]; then
		echo "FAIL: $label: exit $got, the table says $want: $*"
		sed 's/^/  stderr: /' "$work/err" | head -5
		fails=$((fails + 1))
	fi
}

# as nobody (root reads any file): what an unprivileged user gets
nobody() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
	else
		"$@"
	fi
}

if [ "$mode" = "--reelcap-output" ]; then
	# 2 for an output that cannot be created, as reelplay's and reeltool's
	expect 2 "reelcap: output cannot be created" \
		"$reelcap" -w "$work/none/x.reel" -G 1
	rm -rf "$work"
	[ "$fails" = 0 ] && echo "ok: $checks exit statuses as the table says"
	[ "$fails" = 0 ]
	exit
fi

cp "$data/good.reel" "$work/good.reel"
cp "$data/bitflip.reel" "$work/damaged.reel"
cp "$data/good.reel" "$work/unreadable.reel"
chmod 600 "$work/unreadable.reel"
[ "$(id -u)" = 0 ] || chmod 000 "$work/unreadable.reel"

# reelplay
expect 0 "reelplay: ok" "$reelplay" "$work/good.reel"
expect 0 "reelplay: a filter that selects nothing" \
	"$reelplay" "$work/good.reel" --json "$work/p.json" 'host 192.0.2.1'
expect 2 "reelplay: unknown option" "$reelplay" --bogus "$work/good.reel"
expect 2 "reelplay: bad value" "$reelplay" "$work/good.reel" --from yesterday
expect 2 "reelplay: bad filter expression" "$reelplay" "$work/good.reel" 'tcp port foo'
expect 2 "reelplay: missing file" "$reelplay" "$work/none.reel"
expect 2 "reelplay: unreadable file" nobody "$reelplay" "$work/unreadable.reel"
expect 2 "reelplay: output cannot be created" \
	"$reelplay" "$work/good.reel" -w "$work/none/x.pcapng"
expect 1 "reelplay: output cannot be written" "$reelplay" "$work/good.reel" -w /dev/full
expect 1 "reelplay: damaged input" "$reelplay" "$work/damaged.reel"

# reeltool
expect 0 "reeltool: ok" "$reeltool" verify "$work/good.reel"
expect 2 "reeltool: unknown option" "$reeltool" --bogus
expect 2 "reeltool: unknown subcommand option" "$reeltool" info --bogus "$work/good.reel"
expect 2 "reeltool: missing file" "$reeltool" info "$work/none.reel"
expect 2 "reeltool: unreadable file" nobody "$reeltool" verify "$work/unreadable.reel"
expect 2 "reeltool: output cannot be created" \
	"$reeltool" slice "$work/good.reel" "$work/none/x.reel"
expect 1 "reeltool: output cannot be written" sh -c '"$0" cat "$1" >/dev/full' \
	"$reeltool" "$work/good.reel"
expect 1 "reeltool: damaged input" "$reeltool" verify "$work/damaged.reel"
expect 1 "reeltool: damaged input (cat)" "$reeltool" cat "$work/damaged.reel"

# reelcap (no capture runs: each fails before or at loading BPF)
expect 2 "reelcap: unknown option" "$reelcap" --bogus -w "$work/c.reel"
expect 2 "reelcap: bad value" "$reelcap" -w "$work/c.reel" --snaplen lots
chmod 777 "$work"
expect 1 "reelcap: not root" nobody "$reelcap" -w "$work/c.reel" -G 1
chmod 755 "$work"

# --replay-to: differences found (a target that answers something else)
if command -v python3 >/dev/null; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir "$work/www"
	(cd "$work/www" && exec python3 -m http.server -b 127.0.0.1 "$port" >/dev/null 2>&1) &
	srv=$!
	i=0
	while [ $i -lt 50 ] && ! python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	expect 1 "reelplay: differences under --replay-to" \
		"$reelplay" "$trace" --replay-to "127.0.0.1:$port" --rate 1000 --timeout 5
	kill "$srv"
	wait "$srv" 2>/dev/null
fi

rm -rf "$work"
if [ "$fails" != 0 ]; then
	echo "FAIL: $fails of $checks exit statuses differ from the table"
	exit 1
fi
echo "ok: $checks exit statuses as the table says"

#!/usr/bin/env bash
# transfer-netns.sh: vkzip transfer, raw against compressed, over a shaped link between two network namespaces.
#
#   sudo scripts/transfer-netns.sh [RATE]        # RATE in tc units, e.g. 1gbit, 2gbit (default 2gbit, or $RATE)
#
# It builds vkzip, creates two network namespaces joined by a veth pair, shapes the sending end with
# `tc qdisc ... tbf rate RATE`, and runs `vkzip recv` in one namespace and `vkzip send` in the other, first with
# --raw, then compressed, on the same data (SIZE bytes of generated KV-like BF16). It prints both runs' times,
# effective rates, CPU use and the tbf qdisc's byte counts (`tc -s qdisc`), then the speedup. Everything it
# creates is removed on exit, however it exits.
#
# Exit status: 0 when both transfers were verified bit-exact and compressed was at least GOAL times faster than
# raw; 1 on a failed transfer, a hash mismatch or a speedup under GOAL; 2 when it cannot run (not root, tools
# missing). It warns when raw reached less than 90% of the shaped rate: the CPU, not the link, limited raw there,
# and the comparison says little about links of that rate.
#
# Environment: RATE (2gbit), SIZE (1GiB), DATA (kvlike; or gauss, escapes=P), GOAL (1.25), CHUNK (4MiB: send --frame-size),
# BURST (bytes; default 1 ms at RATE, at least 128 KiB), LATENCY (tbf queue, 50ms), SEND_FLAGS and RECV_FLAGS
# (more flags for vkzip send / recv, e.g. SEND_FLAGS="--codebook cb.json"), VKZIP (a prebuilt binary: skip the
# build).
set -euo pipefail

RATE=${1:-${RATE:-2gbit}}
SIZE=${SIZE:-1GiB}
DATA=${DATA:-kvlike}
GOAL=${GOAL:-1.25}
CHUNK=${CHUNK:-4MiB}
LATENCY=${LATENCY:-50ms}
SEND_FLAGS=${SEND_FLAGS:-}
RECV_FLAGS=${RECV_FLAGS:-}

say() { printf 'transfer-netns: %s\n' "$*" >&2; }

if [[ $(id -u) -ne 0 ]]; then
	say "must run as root: it creates network namespaces, a veth pair and a tc qdisc"
	exit 2
fi
for tool in ip tc awk; do
	if ! command -v "$tool" >/dev/null; then
		say "$tool is missing (apt-get install iproute2 gawk)"
		exit 2
	fi
done

# Rate in bits per second, from tc units (bit, kbit, mbit, gbit, tbit; decimal as tc has them).
rate_bps=$(awk -v r="$RATE" 'BEGIN {
	r = tolower(r); m = 0
	if (r ~ /tbit$/) m = 1e12; else if (r ~ /gbit$/) m = 1e9; else if (r ~ /mbit$/) m = 1e6
	else if (r ~ /kbit$/) m = 1e3; else if (r ~ /bit$/) m = 1
	sub(/[a-z]+$/, "", r)
	if (m == 0 || r + 0 <= 0) exit 1
	printf "%.0f", r * m }') || { say "bad RATE '$RATE' (want tc units, e.g. 2gbit)"; exit 2; }
BURST=${BURST:-$(awk -v b="$rate_bps" 'BEGIN { x = b / 8 / 1000; if (x < 131072) x = 131072; printf "%.0f", x }')}

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/vkzip-netns.XXXXXX)
id=$$
ns_send=vkzsend$id
ns_recv=vkzrecv$id
if_send=vkzs$id
if_recv=vkzr$id
addr_send=10.231.0.1
addr_recv=10.231.0.2
port=7468
recv_pid=

cleanup() {
	local rc=$?
	if [[ -n $recv_pid ]]; then
		kill "$recv_pid" 2>/dev/null || true
		wait "$recv_pid" 2>/dev/null || true
	fi
	ip netns del "$ns_send" 2>/dev/null || true # takes the veth pair with it
	ip netns del "$ns_recv" 2>/dev/null || true
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${VKZIP:-} ]]; then
	bin=$VKZIP
else
	say "building vkzip"
	(cd "$root" && go build -o "$work/vkzip" ./cmd/vkzip)
	bin=$work/vkzip
fi

ip netns add "$ns_send"
ip netns add "$ns_recv"
ip link add "$if_send" type veth peer name "$if_recv"
ip link set "$if_send" netns "$ns_send"
ip link set "$if_recv" netns "$ns_recv"
ip -n "$ns_send" addr add "$addr_send/30" dev "$if_send"
ip -n "$ns_recv" addr add "$addr_recv/30" dev "$if_recv"
for ns in "$ns_send" "$ns_recv"; do ip -n "$ns" link set lo up; done
ip -n "$ns_send" link set "$if_send" up
ip -n "$ns_recv" link set "$if_recv" up

# jget FILE KEY: a scalar from vkzip's indented JSON output.
jget() { sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1" | head -n 1; }
# cpu FILE: "user+sys" CPU seconds of one end.
cpu() { awk -v u="$(jget "$1" cpu_user_seconds)" -v s="$(jget "$1" cpu_sys_seconds)" 'BEGIN { printf "%.2f+%.2f", u, s }'; }

say "$(nproc) CPUs; $SIZE of $DATA; tbf rate $RATE burst $BURST latency $LATENCY on $if_send (sender side); frames of $CHUNK"
failed=0
for mode in raw vkzip; do
	flag=
	[[ $mode == raw ]] && flag=--raw
	# A fresh qdisc per run: full bucket, counters from zero.
	tc -n "$ns_send" qdisc del dev "$if_send" root 2>/dev/null || true
	tc -n "$ns_send" qdisc add dev "$if_send" root tbf rate "$RATE" burst "$BURST" latency "$LATENCY"
	# shellcheck disable=SC2086
	ip netns exec "$ns_recv" "$bin" recv --listen "$addr_recv:$port" -o /dev/null --json --timeout 120s $RECV_FLAGS \
		>"$work/recv-$mode.json" 2>"$work/recv-$mode.err" &
	recv_pid=$!
	# shellcheck disable=SC2086
	if ! ip netns exec "$ns_send" "$bin" send --connect "$addr_recv:$port" $flag --frame-size "$CHUNK" --synth "$DATA" \
		--size "$SIZE" --json $SEND_FLAGS >"$work/send-$mode.json" 2>"$work/send-$mode.err"; then
		say "$mode: send failed: $(cat "$work/send-$mode.err")"
		failed=1
		# A sender that failed before connecting leaves the receiver waiting: stop it.
		sleep 1
		kill "$recv_pid" 2>/dev/null || true
	fi
	if ! wait "$recv_pid"; then
		failed=1
		if grep -qv 'listening on' "$work/recv-$mode.err"; then
			say "$mode: recv failed: $(grep -v 'listening on' "$work/recv-$mode.err")"
		fi
	fi
	recv_pid=
	echo "--- $mode: tc -s qdisc show dev $if_send (sender side)"
	tc -s -n "$ns_send" qdisc show dev "$if_send"
	tc -s -n "$ns_send" qdisc show dev "$if_send" | awk '/Sent/ { print $2 }' >"$work/tc-$mode.bytes"
done
if [[ $failed -ne 0 ]]; then
	say "FAIL: a transfer failed"
	exit 1
fi

echo
printf '%-6s %9s %9s %8s %14s %14s %7s %14s %14s %8s\n' mode seconds "Gbit/s" "eff/rate" "payload B" "tc bytes" ratio \
	"send CPU u+s" "recv CPU u+s" verified
for mode in raw vkzip; do
	s=$work/send-$mode.json r=$work/recv-$mode.json
	printf '%-6s %9.3f %9.3f %7.1f%% %14s %14s %7.4f %14s %14s %8s\n' "$mode" "$(jget "$s" seconds)" \
		"$(jget "$s" gbitps)" "$(awk -v g="$(jget "$s" gbitps)" -v b="$rate_bps" 'BEGIN { print 100 * g * 1e9 / b }')" \
		"$(jget "$s" payload_bytes)" "$(cat "$work/tc-$mode.bytes")" "$(jget "$s" ratio)" "$(cpu "$s")" "$(cpu "$r")" \
		"$(jget "$r" verified)"
done

raw_s=$(awk -v x="$(jget "$work/send-raw.json" seconds)" 'BEGIN { printf "%.3f", x }')
vkz_s=$(awk -v x="$(jget "$work/send-vkzip.json" seconds)" 'BEGIN { printf "%.3f", x }')
raw_gbit=$(jget "$work/send-raw.json" gbitps)
speedup=$(awk -v a="$raw_s" -v b="$vkz_s" 'BEGIN { printf "%.3f", a / b }')
link=$(awk -v g="$raw_gbit" -v b="$rate_bps" 'BEGIN { printf "%.1f", 100 * g * 1e9 / b }')
for mode in raw vkzip; do
	for end in send recv; do
		if [[ $(jget "$work/$end-$mode.json" verified) != true ]]; then
			say "FAIL: $mode: the $end end does not report a verified (bit-exact) delivery"
			exit 1
		fi
	done
	if [[ $(jget "$work/send-$mode.json" digest) != "$(jget "$work/recv-$mode.json" digest)" ]]; then
		say "FAIL: $mode: digest differs between the ends"
		exit 1
	fi
done
if [[ $(jget "$work/send-raw.json" digest) != "$(jget "$work/send-vkzip.json" digest)" ]]; then
	say "FAIL: the raw and compressed runs did not send the same data"
	exit 1
fi
echo
echo "rate $RATE: raw $raw_s s ($link% of the shaped rate), vkzip $vkz_s s: speedup ${speedup}x (goal ${GOAL}x); bit-exact both"
if awk -v l="$link" 'BEGIN { exit !(l < 90) }'; then
	say "warning: raw reached only $link% of $RATE: the CPU, not the link, limits raw at this rate"
fi
if awk -v s="$speedup" -v g="$GOAL" 'BEGIN { exit !(s < g) }'; then
	say "FAIL: speedup ${speedup}x is under the goal of ${GOAL}x"
	exit 1
fi

#!/usr/bin/env bash
# make bench-streams: issue 46's restated stream targets. 1,000 conversation and 200 tenant
# subscribers on one bbolt node, at execution rates stepped up (harness-load -phases streams
# -streams-rate N) until the server is one core busy with the subscribers or the rate stops
# rising; then the server's CPU profile at the highest rate under one core; then 100
# conversation + 20 tenant subscribers through two PostgreSQL nodes (executions on node a,
# subscribers on node b; the set-up is scripts/lib/pg-cluster.sh's, as in bench-cluster.sh),
# stepped the same way until either node is one core busy.
#
# Prints a Markdown table per set-up, one row per rate: executions/s achieved with the
# subscribers, the server's cores busy and CPU (and write calls) per delivered event, events
# delivered/s, lag (event time → receipt) p50/p99 and what makes its p99 (each entry's first
# receipt: commit and publication; the spread to its last subscriber: the fan-out; the load
# tool's own wait for a core), the load tool's CPU (it runs on the same cores), and duplicates /
# out-of-order / errors (all must be 0), with the machine's load average. Writes
# nothing into the repository. Environment (all optional):
#
#   STREAMS_RATES          one node's rates (default "50 100 150 200 300 400 600")
#   STREAMS_CLUSTER_RATES  the two nodes' rates (default "50 100 200 400 800 1600"); STREAMS_CLUSTER=0
#                          skips the two nodes
#   STREAMS_DURATION       each e2e run of a step (default 8s; a step runs it alone, then with
#                          the subscribers: about 25 s a step)
#   STREAMS_IDLE_HOLD      how long the subscribers wait before the load (default 3s: they
#                          stay attached to net/http, as a stream of a busy conversation does;
#                          17s or more measures streams that detached when idle)
#   STREAMS_CLIENTS        e2e clients (default 128: the rate is the cap, not the clients'
#                          round trips), STREAMS_BUSY_CLIENTS of them in the busy conversation
#                          (default 16, an eighth, as harness-load's defaults 4 of 32)
#   STREAMS_PROFILE=0      no CPU profile; STREAMS_KEEP=1 keeps the temporary directory
#   CADDY                  a binary to measure instead of building bin/caddy
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
log() { printf 'bench-streams: %s\n' "$*" >&2; }
source scripts/lib/pg-cluster.sh

log "building bin/caddy and bin/harness-load"
mkdir -p bin
CADDY=${CADDY:-bin/caddy}
[[ $CADDY != bin/caddy ]] || $GO build -o bin/caddy ./cmd/caddy
$GO build -o bin/harness-load ./cmd/harness-load

WORK=$(mktemp -d "${TMPDIR:-/tmp}/harness-streams-bench.XXXXXX")
NODE_PID=
cleanup() {
	if [[ -n $NODE_PID ]]; then kill "$NODE_PID" 2>/dev/null || true; wait "$NODE_PID" 2>/dev/null || true; fi
	cluster_stop
	if [[ ${STREAMS_KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# Each subscriber is a descriptor in the server and one in the load tool.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

extra() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
lag() { sed -n "/\"lag\": {/,/}/s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
COMMON=(-phases streams -clients "${STREAMS_CLIENTS:-128}" -streams-busy-clients "${STREAMS_BUSY_CLIENTS:-16}"
	-streams-duration "${STREAMS_DURATION:-8s}" -streams-idle-hold "${STREAMS_IDLE_HOLD:-3s}")

# step OUT CORES_KEYS… -- harness-load flags: one run; prints its row, sets CORES (the busiest
# node's cores) and RATE (executions/s achieved with the subscribers).
step() {
	local out=$1 load
	shift
	local keys=()
	while [[ $1 != -- ]]; do keys+=("$1"); shift; done
	shift
	load=$(loadavg)
	local wkey=serverWriteSyscallsPerDeliveredEvent
	[[ " ${keys[*]} " != *" subscribeServer "* ]] || wkey=subscribeServerWriteSyscallsPerDeliveredEvent # the subscribers' node's
	bin/harness-load "${COMMON[@]}" "$@" -json "$out" 2>>"$WORK/load.log" >/dev/null
	RATE=$(extra "$out" executionsPerSecondWithSubs)
	local cores=() us=0 k c
	CORES=0
	for k in "${keys[@]}"; do
		c=$(extra "$out" "${k}CpuCoresBusyWithSubs")
		cores+=("$(printf '%.2f' "$c")")
		CORES=$(awk -v a="$CORES" -v b="$c" 'BEGIN { print (b > a ? b : a) }')
		us=$(awk -v a="$us" -v b="$(extra "$out" "${k}CpuUsPerDeliveredEvent")" 'BEGIN { print a + b }')
	done
	local joined
	joined=$(printf '%s + ' "${cores[@]}")
	awk -v cap="$(extra "$out" executionRateCap)" -v alone="$(extra "$out" executionsPerSecondAlone)" -v r="$RATE" \
		-v cores="${joined% + }" -v us="$us" -v ev="$(extra "$out" throughput)" -v p50="$(lag "$out" p50Ms)" -v p99="$(lag "$out" p99Ms)" \
		-v fr="$(extra "$out" firstReceiptLagP99Ms)" -v sp="$(extra "$out" fanoutSpreadP99Ms)" \
		-v sd="$(extra "$out" loadSchedDelayP99Ms)" -v wr="$(extra "$out" "$wkey")" \
		-v lc="$(extra "$out" loadCpuCoresBusyWithSubs)" -v lus="$(extra "$out" loadCpuUsPerDeliveredEvent)" \
		-v d="$(extra "$out" duplicates)" -v o="$(extra "$out" outOfOrder)" -v e="$(sed -n 's/.*"errors": *\([0-9]*\).*/\1/p' "$out" | awk '{ s += $1 } END { print s + 0 }')" \
		-v load="$load" \
		'BEGIN { printf "| %d/s | %.0f → %.0f/s | %s | %.2f µs (%.3f writes) | %.0f/s | %.1f / %.1f ms | %.1f / %.1f / %.1f ms | %.2f (%.2f µs/event) | %d / %d / %d | %s |\n",
			cap, alone, r, cores, us, wr, ev, p50, p99, fr, sp, sd, lc, lus, d, o, e, load }'
}
header() {
	echo "| rate cap | executions/s alone → with subscribers | $1 cores busy | server CPU per delivered event (write calls) | events delivered | lag p50 / p99 | p99s: first receipt / fan-out spread / load tool's scheduling delay | load tool cores (per event) | duplicates / out of order / errors | load average before |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
}
# climb PREFIX RATES KEYS -- FLAGS: steps the rates until the busiest node is one core busy or
# the achieved rate stops rising (under 5 % above the previous step's); sets BEST_RATE, the
# highest rate achieved with every node under one core, and BEST, its step's cap.
climb() {
	local prefix=$1 rates=$2
	shift 2
	local keys=()
	while [[ $1 != -- ]]; do keys+=("$1"); shift; done
	shift
	local prev=0 rate
	BEST= BEST_RATE=0
	for rate in $rates; do
		log "$prefix: -streams-rate $rate"
		step "$WORK/$prefix-$rate.json" "${keys[@]}" -- -streams-rate "$rate" "$@"
		if awk -v c="$CORES" 'BEGIN { exit !(c >= 1) }'; then break; fi
		if awk -v r="$RATE" -v b="$BEST_RATE" 'BEGIN { exit !(r > b) }'; then BEST=$rate BEST_RATE=$RATE; fi
		if awk -v r="$RATE" -v p="$prev" 'BEGIN { exit !(r < 1.05 * p) }'; then break; fi
		prev=$RATE
	done
	BEST_RATE=$(printf '%.0f' "$BEST_RATE")
}

# 1. One node, bbolt: 1,000 conversation + 200 tenant subscribers.
mapfile -t PORTS < <(bin/harness-load -free-ports 2)
BASE=http://127.0.0.1:${PORTS[0]} ADMIN=http://127.0.0.1:${PORTS[1]}
cat >"$WORK/Caddyfile" <<EOF
{
	admin 127.0.0.1:${PORTS[1]}
	log {
		level WARN
	}
}

:${PORTS[0]} {
	bind 127.0.0.1
	harness {
		store bolt {
			path $WORK/data
		}
		provider mock
	}
}
EOF
XDG_DATA_HOME=$WORK/xdg-data XDG_CONFIG_HOME=$WORK/xdg-config \
	"$CADDY" run --config "$WORK/Caddyfile" --adapter caddyfile >"$WORK/caddy.log" 2>&1 &
NODE_PID=$!
for _ in $(seq 1 100); do curl -fsS "$BASE/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$BASE/healthz" >/dev/null || { log "bin/caddy did not start:"; cat "$WORK/caddy.log" >&2; exit 1; }
ONE=(-url "$BASE" -admin "$ADMIN" -server-pid "$NODE_PID" -conversation-subscribers 1000 -tenant-subscribers 200)

echo "### One node (bbolt): 1,000 conversation + 200 tenant subscribers"
echo
echo "\`bin/harness-load ${COMMON[*]} -conversation-subscribers 1000 -tenant-subscribers 200 -streams-rate N\`, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
header server
climb one "${STREAMS_RATES:-50 100 150 200 300 400 600}" server -- "${ONE[@]}"
echo
echo "Highest execution rate with the server under one core: **$BEST_RATE/s** (cap ${BEST:-none}/s); the climb stops at one core busy or when the rate stops rising (the machine's cores are then the limit: the load tool and the neighbours' work share them)."
if [[ ${STREAMS_PROFILE:-1} != 0 && -n $BEST ]]; then
	log "CPU profile at -streams-rate $BEST"
	mkdir -p "$WORK/profile"
	bin/harness-load "${COMMON[@]}" "${ONE[@]}" -streams-rate "$BEST" -profile-dir "$WORK/profile" -profile-phases streams \
		-json "$WORK/profile.json" 2>>"$WORK/load.log" >/dev/null
	echo
	echo "<details><summary>Server CPU profile with the subscribers at $BEST/s (<code>go tool pprof -top</code>)</summary>"
	echo
	echo '```'
	$GO tool pprof -top -nodecount=25 "$CADDY" "$WORK/profile/cpu-streams.pprof" 2>/dev/null | sed -n '4,40p'
	echo '```'
	echo "</details>"
fi
kill "$NODE_PID" && wait "$NODE_PID" 2>/dev/null || true
NODE_PID=

# 2. Two PostgreSQL nodes: executions on a, 100 conversation + 20 tenant subscribers on b.
if [[ ${STREAMS_CLUSTER:-1} != 0 ]]; then
	cluster_up
	echo
	echo "### Two nodes (PostgreSQL 15): executions on a, 100 conversation + 20 tenant subscribers on b"
	echo
	echo "\`bin/harness-load ${COMMON[*]} -url \$A -subscribe-url \$B -conversation-subscribers 100 -tenant-subscribers 20 -streams-rate N\`; cores are node a + node b (PostgreSQL's own processes not counted), CPU per event the two nodes' together"
	echo
	header "node a + node b"
	climb two "${STREAMS_CLUSTER_RATES:-50 100 200 400 800 1600}" server subscribeServer -- \
		-url "$A" -admin "$A_ADMIN" -server-pid "$A_PID" -subscribe-url "$B" -subscribe-server-pid "$B_PID" \
		-conversation-subscribers 100 -tenant-subscribers 20
	echo
	echo "Highest execution rate with both nodes under one core: **$BEST_RATE/s** (cap ${BEST:-none}/s)."
fi
echo
echo "Load average after: $(loadavg)"

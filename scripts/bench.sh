#!/usr/bin/env bash
# make bench: build bin/caddy and bin/harness-load, serve the protocol from a temporary data
# directory on a free loopback port (admin/pprof endpoint on another free loopback port), run the
# Go benchmarks and the load tool, and write docs/performance-log.md, the measurements log (the figures between the
# "bench:begin" and "bench:end" markers; the hand-written analysis around them is kept).
#
# Needs bash, curl and the Go toolchain. Environment (all optional):
#   BENCH_LOAD_FLAGS   extra flags for harness-load (e.g. "-idle-streams 2000 -history-executions 20000")
#   BENCH_GO_FLAGS     flags for the Go benchmarks (default: -benchtime 2s)
#   BENCH_SKIP_GO=1    skip the Go benchmarks
#   BENCH_PROFILE=0    do not capture CPU profiles through the admin endpoint
#   BENCH_OUT          output file (default docs/performance-log.md)
#   BENCH_KEEP=1       keep the temporary directory (store, logs, profiles, JSON)
#   BENCH_FLOOR=0      do not measure against the floor program (bin/harness-floor)
#   BENCH_FLOOR_ROUNDS rounds of the floor comparison (default 3; each: floor, then server, in one
#                      request and then the portable way)
#   BENCH_FLOOR_DURATION  length of each e2e run of the comparison (default 10s)
#   BENCH_FLOOR_FLAGS  extra harness-load flags for both sides of the comparison (e.g. "-clients 16")
#   BENCH_FLOOR_WAYS   the -e2e-start ways compared with the floor (default "stream separate raw":
#                      one request, the portable way through the SDK, the portable way in raw HTTP)
#   BENCH_ONLY=floor   only the floor comparison: no Go benchmarks, live comparison or load run;
#                      its tables go to stdout and BENCH_OUT is left alone (for before/after rounds)
#   BENCH_LIVE=0, BENCH_LIVE_ROUNDS, BENCH_LIVE_FLAGS, BENCH_LIVE_LINGER  the live comparison of
#                      issue 46 (scripts/bench_live.sh)
#   BENCH_COMMIT_LINGER  commit_linger of the server's store (default: the server's default, 2ms)
#   BENCH_REFERENCE_URL, BENCH_REFERENCE_PID  a server started by hand (the TypeScript reference,
#                      built outside the repository) measured the portable way in each round
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${BENCH_OUT:-docs/performance-log.md}
GO=${GO:-go}
BEGIN=$(date +%s)

log() { printf 'bench: %s\n' "$*" >&2; }

log "building bin/caddy, bin/harness-load and bin/harness-floor"
mkdir -p bin
$GO build -o bin/caddy ./cmd/caddy
$GO build -o bin/harness-load ./cmd/harness-load
$GO build -o bin/harness-floor ./cmd/harness-floor

WORK=$(mktemp -d "${TMPDIR:-/tmp}/harness-bench.XXXXXX")
CADDY_PID=
FLOOR_PID=
LIVE_FLOOR0_PID=
LIVE_FLOORL_PID=
cleanup() {
	for pid in $CADDY_PID $FLOOR_PID $LIVE_FLOOR0_PID $LIVE_FLOORL_PID; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [[ ${BENCH_KEEP:-0} == 1 ]]; then
		log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

mapfile -t PORTS < <(bin/harness-load -free-ports 5)
LIVE_PORTS=("${PORTS[3]}" "${PORTS[4]}")
PORT=${PORTS[0]}
ADMIN_PORT=${PORTS[1]}
FLOOR_PORT=${PORTS[2]}
BASE="http://127.0.0.1:$PORT"
ADMIN="http://127.0.0.1:$ADMIN_PORT"
cat >"$WORK/Caddyfile" <<EOF
{
	admin 127.0.0.1:$ADMIN_PORT
	# Quiet: no per-request logging, warnings and errors only.
	log {
		level WARN
	}
}

:$PORT {
	bind 127.0.0.1
	harness {
		store bolt {
			path $WORK/data${BENCH_COMMIT_LINGER:+
			commit_linger $BENCH_COMMIT_LINGER}
		}
		provider mock
	}
}
EOF

# Each idle stream is one descriptor in the server (and one in the load tool, which raises its
# own limit to the hard one): lift both limits to what 100,000 streams need where allowed (root,
# or a hard limit that high), else the soft limit to the hard one, for the server started below.
ulimit -n 262144 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
log "starting bin/caddy on $BASE (admin $ADMIN, data $WORK/data, file limit $(ulimit -n))"
bin/caddy run --config "$WORK/Caddyfile" --adapter caddyfile >"$WORK/caddy.log" 2>&1 &
CADDY_PID=$!
for _ in $(seq 1 100); do
	if curl -fsS "$BASE/healthz" >/dev/null 2>&1; then break; fi
	if ! kill -0 "$CADDY_PID" 2>/dev/null; then
		log "bin/caddy exited:"; cat "$WORK/caddy.log" >&2; exit 1
	fi
	sleep 0.1
done
curl -fsS "$BASE/healthz" >/dev/null

GO_BENCH_CMD="$GO test -run '^\$' -bench . ${BENCH_GO_FLAGS:--benchtime 2s} ./backend/"
if [[ ${BENCH_SKIP_GO:-0} != 1 && ${BENCH_ONLY:-} != floor ]]; then
	log "running the Go benchmarks: $GO_BENCH_CMD"
	eval "$GO_BENCH_CMD" | tee "$WORK/gobench.txt" >&2
else
	: >"$WORK/gobench.txt"
fi

# The floor (cmd/harness-floor): the same wire work as one e2e execution on plain net/http, one
# durable bbolt Put through a group commit. Each round runs the same e2e phase of the same load
# tool against the floor, then against the server, minutes apart at most, and the figure is the
# ratio of server CPU per execution (ours / floor): on a shared machine the absolute times move
# with the neighbours' load, the ratio of two runs taken together much less. Both ways a client
# runs an execution are measured, each against the floor doing the same: in one request (the Go
# SDK's Run, `-e2e-start stream`) and the portable way every other client takes (start, 202,
# then the event stream: `-e2e-start separate`); and the portable way's cost over the one
# request's, both ours, in the same round.
#
# BENCH_REFERENCE_URL (and BENCH_REFERENCE_PID, its server process) adds a server you started
# yourself, such as the TypeScript reference built outside this repository, measured the
# portable way in each round right after ours: its CPU per execution over ours.
FLOOR_ROWS=
FLOOR_DETAIL_ROWS=
if [[ ${BENCH_FLOOR:-1} == 1 ]]; then
	FLOOR="http://127.0.0.1:$FLOOR_PORT"
	# The floor's group commit lingers as ours does (commit_linger), so that both batch alike.
	bin/harness-floor -listen "127.0.0.1:$FLOOR_PORT" -data-dir "$WORK/floor" -linger "${BENCH_COMMIT_LINGER:-2ms}" >"$WORK/floor.log" 2>&1 &
	FLOOR_PID=$!
	for _ in $(seq 1 100); do
		curl -fsS "$FLOOR/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	FLOOR_CMD="bin/harness-load -phases e2e -e2e-duration ${BENCH_FLOOR_DURATION:-10s} ${BENCH_FLOOR_FLAGS:-}"
	extra() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
	median() { printf '%s\n' "$@" | { grep -v n/a || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "n/a" }'; }
	# detail ROUND WAY SERVER FILE: one row of what an execution cost that server.
	detail() {
		awk -v n="$1" -v way="$2" -v who="$3" -v c="$(extra "$4" serverCpuUsPerExec)" -v a="$(extra "$4" serverAllocsPerExec)" \
			-v b="$(extra "$4" serverAllocBytesPerExec)" -v w="$(extra "$4" serverWriteSyscallsPerExec)" -v r="$(extra "$4" serverReadSyscallsPerExec)" \
			-v f="$(extra "$4" serverFsyncsPerExec)" -v t="$(extra "$4" throughput)" \
			'BEGIN { printf "| %d | %s | %s | %.0f µs | %s | %s | %s | %s | %.0f/s |\n", n, way, who, c,
				a == "" ? "–" : sprintf("%.0f (%.1f KB)", a, b / 1000), w == "" ? "–" : sprintf("%.2f", w),
				r == "" ? "–" : sprintf("%.2f", r), f == "" ? "–" : sprintf("%.2f", f), t }'
	}
	ONE_RATIOS=()
	PORTABLE_RATIOS=()
	RAW_RATIOS=()
	OVER_ONE=()
	REF_RATIOS=()
	for round in $(seq 1 "${BENCH_FLOOR_ROUNDS:-3}"); do
		load=$(cut -d' ' -f1 /proc/loadavg)
		for way in ${BENCH_FLOOR_WAYS:-stream separate raw}; do
			log "floor comparison, round $round, -e2e-start $way: the floor, then the server ($FLOOR_CMD)"
			$FLOOR_CMD -e2e-start $way -url "$FLOOR" -admin "$FLOOR" -server-pid "$FLOOR_PID" -json "$WORK/floor-$way-$round.json" 2>>"$WORK/floor-load.log"
			$FLOOR_CMD -e2e-start $way -url "$BASE" -admin "$ADMIN" -server-pid "$CADDY_PID" -json "$WORK/ours-$way-$round.json" 2>>"$WORK/floor-load.log"
		done
		ref=n/a
		if [[ -n ${BENCH_REFERENCE_URL:-} ]]; then
			log "floor comparison, round $round: the reference at $BENCH_REFERENCE_URL, the portable way"
			$FLOOR_CMD -e2e-start separate -url "$BENCH_REFERENCE_URL" -server-pid "${BENCH_REFERENCE_PID:-0}" -json "$WORK/reference-$round.json" 2>>"$WORK/floor-load.log"
			ref=$(extra "$WORK/reference-$round.json" serverCpuUsPerExec)
		fi
		fs=$(extra "$WORK/floor-stream-$round.json" serverCpuUsPerExec 2>/dev/null || true)
		os=$(extra "$WORK/ours-stream-$round.json" serverCpuUsPerExec 2>/dev/null || true)
		fp=$(extra "$WORK/floor-separate-$round.json" serverCpuUsPerExec 2>/dev/null || true)
		op=$(extra "$WORK/ours-separate-$round.json" serverCpuUsPerExec 2>/dev/null || true)
		fr=$(extra "$WORK/floor-raw-$round.json" serverCpuUsPerExec 2>/dev/null || true)
		or=$(extra "$WORK/ours-raw-$round.json" serverCpuUsPerExec 2>/dev/null || true)
		RAW_RATIOS+=("$(ratio "$or" "$fr")")
		ONE_RATIOS+=("$(ratio "$os" "$fs")")
		PORTABLE_RATIOS+=("$(ratio "$op" "$fp")")
		OVER_ONE+=("$(ratio "$op" "$os")")
		REF_RATIOS+=("$(ratio "$ref" "$op")")
		FLOOR_ROWS+="| $round | $load | ${ONE_RATIOS[-1]} | ${PORTABLE_RATIOS[-1]} | ${RAW_RATIOS[-1]} | **${OVER_ONE[-1]}** | ${REF_RATIOS[-1]} |"$'\n'
		for w in "stream/one request" "separate/portable" "raw/portable, raw HTTP"; do
			[[ -s $WORK/floor-${w%%/*}-$round.json ]] || continue
			FLOOR_DETAIL_ROWS+="$(detail "$round" "${w#*/}" floor "$WORK/floor-${w%%/*}-$round.json")"$'\n'
			FLOOR_DETAIL_ROWS+="$(detail "$round" "${w#*/}" harness-edge "$WORK/ours-${w%%/*}-$round.json")"$'\n'
		done
		if [[ $ref != n/a ]]; then
			FLOOR_DETAIL_ROWS+="$(detail "$round" portable reference "$WORK/reference-$round.json")"$'\n'
		fi
		log "floor comparison, round $round: one request ${ONE_RATIOS[-1]}× its floor, portable ${PORTABLE_RATIOS[-1]}× its floor (raw HTTP ${RAW_RATIOS[-1]}×), portable ${OVER_ONE[-1]}× one request; reference ${REF_RATIOS[-1]}× ours"
	done
	MEDIAN_RATIO=$(median "${ONE_RATIOS[@]}")
	MEDIAN_PORTABLE=$(median "${PORTABLE_RATIOS[@]}")
	MEDIAN_RAW=$(median "${RAW_RATIOS[@]}")
	MEDIAN_OVER_ONE=$(median "${OVER_ONE[@]}")
	MEDIAN_REF=$(median "${REF_RATIOS[@]}")
	log "floor comparison: server CPU per execution ${MEDIAN_RATIO}× the floor's in one request, ${MEDIAN_PORTABLE}× the portable way (${MEDIAN_RAW}× in raw HTTP); the portable way ${MEDIAN_OVER_ONE}× one request (medians of ${#ONE_RATIOS[@]} rounds)"
	kill "$FLOOR_PID" 2>/dev/null || true
	wait "$FLOOR_PID" 2>/dev/null || true
	FLOOR_PID=
fi

# write_floor_section prints the floor comparison's tables (nothing without one).
write_floor_section() {
	[[ -n $FLOOR_ROWS ]] || return 0
	[[ -n ${BENCH_REFERENCE_URL:-} ]] && REF_NOTE=", then the reference (\`BENCH_REFERENCE_URL\`) the portable way"
	echo "Against the floor (\`bin/harness-floor\`, the same wire work on plain net/http; see \"The floor\" above), medians of the rounds: server CPU per execution **${MEDIAN_RATIO}× the floor's in one request** (start and stream, the Go SDK's \`Run\`), **${MEDIAN_PORTABLE}× the floor's the portable way** (start, 202, then the event stream: every other client; through the SDK, whose starts carry an Idempotency-Key), **${MEDIAN_RAW}× the floor's the portable way in raw HTTP** (no Idempotency-Key: a browser, curl, the hidden bench), and the portable way **${MEDIAN_OVER_ONE}× the one request**. Each round: \`$FLOOR_CMD -e2e-start stream\` against the floor, then against \`bin/caddy\`, then the same with \`-e2e-start separate\` and \`-e2e-start raw\`${REF_NOTE:-}."
	echo
	echo "| round | load | one request ÷ its floor | portable ÷ its floor | portable, raw HTTP ÷ its floor | portable ÷ one request (ours) | reference ÷ ours, portable |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	printf '%s' "$FLOOR_ROWS"
	echo
	echo "Per execution (allocations from the server's Go counters; write and read system calls from \`/proc/<pid>/io\`; fsyncs: two per store commit):"
	echo
	echo "| round | way | server | CPU | allocations | writes | reads | fsyncs | executions/s |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	printf '%s' "$FLOOR_DETAIL_ROWS"
	echo
}

if [[ ${BENCH_ONLY:-} == floor ]]; then
	write_floor_section
	exit 0
fi

# shellcheck source=scripts/bench_live.sh
source "$ROOT/scripts/bench_live.sh"
if [[ ${BENCH_LIVE:-1} == 1 ]]; then
	extra() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
	median() { printf '%s\n' "$@" | { grep -v n/a || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "n/a" }'; }
	run_live_comparison
fi

# The load tool also takes the server's CPU profiles through Caddy's admin endpoint
# (/debug/pprof/profile) during the measured part of the phases named by -profile-phases.
# Idle streams: 100,000 where the file limit allows it, else as many thousands as it allows
# (each stream is a descriptor in the server and one in the load tool), unless given.
IDLE_FLAGS=
if [[ ${BENCH_LOAD_FLAGS:-} != *-idle-streams* ]]; then
	LIMIT=$(ulimit -n)
	if ((LIMIT >= 101000)); then IDLE=100000; else IDLE=$(((LIMIT - 1000) / 1000 * 1000)); fi
	((IDLE < 100000)) && log "file limit $LIMIT (hard limit $(ulimit -Hn)): measuring $IDLE idle streams, not 100,000"
	IDLE_FLAGS="-idle-streams $IDLE"
fi
PROFILE_FLAGS="-profile-dir $WORK"
[[ ${BENCH_PROFILE:-1} == 1 ]] || PROFILE_FLAGS=
LOAD_CMD="bin/harness-load -url $BASE -admin $ADMIN -server-pid $CADDY_PID -data-dir $WORK/data -json $WORK/load.json -md $WORK/load.md $IDLE_FLAGS $PROFILE_FLAGS ${BENCH_LOAD_FLAGS:-}"
log "running the load tool: $LOAD_CMD"
$LOAD_CMD

log "load tool done; writing $OUT"
ELAPSED=$(($(date +%s) - BEGIN))
{
	echo "<!-- bench:begin (generated by scripts/bench.sh; edit outside the markers) -->"
	echo
	echo "### Latest \`make bench\` run"
	echo
	echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC'); \`make bench\` took ${ELAPSED}s."
	echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr); $($GO version | cut -d' ' -f3-)."
	echo "- Server: \`bin/caddy\` (examples-style Caddyfile, mock provider, store on the same disk), file limit $(ulimit -n)."
	echo
	write_floor_section
	write_live_section
	echo "Load tool (\`harness-load\`, through the real Caddy binary over loopback HTTP/1.1):"
	echo
	cat "$WORK/load.md"
	echo
	if [[ -s $WORK/gobench.txt ]]; then
		echo "Go benchmarks (\`$GO_BENCH_CMD\`):"
		echo
		echo '```'
		grep -E '^(Benchmark|goos|goarch|cpu)' "$WORK/gobench.txt" || true
		echo '```'
		echo
	fi
	for phase in e2e fanout saturation replay live; do
		prof="$WORK/cpu-$phase.pprof"
		[[ -s $prof ]] || continue
		echo "<details><summary>Server CPU profile during $phase (<code>go tool pprof -top -cum</code>, Caddy's routing frames hidden)</summary>"
		echo
		echo '```'
		$GO tool pprof -top -cum -nodecount=30 -hide 'caddyhttp|serverHandler|runtime\.(goexit|systemstack|mcall|park_m|schedule)' bin/caddy "$prof" 2>/dev/null |
			grep -v '^\(File\|Build ID\|Type\|Time\):' | sed -n '1,36p' || true
		echo '```'
		echo
		echo "</details>"
		echo
	done
	echo "Reproduce: \`make bench\` (or \`BENCH_LOAD_FLAGS='…' scripts/bench.sh\`). The load tool ran as:"
	echo
	echo '```sh'
	echo "${LOAD_CMD//$WORK/\$WORK}" | sed -E 's/-url http:\/\/127.0.0.1:[0-9]+/-url http:\/\/127.0.0.1:$PORT/; s/-admin http:\/\/127.0.0.1:[0-9]+/-admin http:\/\/127.0.0.1:$ADMIN_PORT/; s/-server-pid [0-9]+/-server-pid $CADDY_PID/' 
	echo '```'
	echo
	echo "<!-- bench:end -->"
} >"$WORK/generated.md"

if [[ -f $OUT ]] && grep -q '<!-- bench:begin' "$OUT" && grep -q '<!-- bench:end -->' "$OUT"; then
	awk -v gen="$WORK/generated.md" '
		/<!-- bench:begin/ { while ((getline line < gen) > 0) print line; skip = 1; next }
		/<!-- bench:end -->/ { skip = 0; next }
		!skip { print }
	' "$OUT" >"$WORK/out.md"
	cp "$WORK/out.md" "$OUT"
else
	{ echo "# Performance: measurements log"; echo; cat "$WORK/generated.md"; } >"$OUT"
fi
log "wrote $OUT in ${ELAPSED}s"

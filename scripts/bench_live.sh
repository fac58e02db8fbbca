# shellcheck shell=bash
# Sourced by scripts/bench.sh: the live comparison of issue 46. Each round runs harness-load's
# live phase (many executions streaming deltas at once, each followed by a raw-HTTP client that
# POSTs then GETs its stream) against the live floor without a linger, the live floor with the
# server's commit linger, and bin/caddy, one after the other; the figure is the server's CPU per
# delivered event as a ratio to each floor's, with lag, events per commit, fsyncs, write calls
# and allocations per event side by side. Expects from bench.sh: WORK, BASE, ADMIN, CADDY_PID,
# LIVE_PORTS (two free ports), extra, ratio, median, log.
#
#   BENCH_LIVE=0          skip it
#   BENCH_LIVE_ROUNDS     rounds (default 3)
#   BENCH_LIVE_FLAGS      harness-load flags for all three (default: the phase's defaults,
#                         64 executions × 50 words × 20 ms, 10 s)
#   BENCH_LIVE_LINGER     the linger given to the second floor (default: the server's
#                         commit_linger as bench.sh configures it, BENCH_COMMIT_LINGER, else its
#                         default, 2ms)

LIVE_ROWS=
LIVE_DETAIL_ROWS=
LIVE_SUMMARY=
live_detail() { # ROUND WHO FILE
	awk -v n="$1" -v who="$2" -v c="$(extra "$3" serverCpuUsPerEvent)" -v p50="$(extra "$3" lagP50Ms)" -v p99="$(extra "$3" lagP99Ms)" \
		-v epc="$(extra "$3" eventsPerCommit)" -v f="$(extra "$3" fsyncsPerEvent)" -v w="$(extra "$3" serverWriteSyscallsPerEvent)" \
		-v a="$(extra "$3" serverAllocsPerEvent)" -v b="$(extra "$3" serverAllocBytesPerEvent)" -v t="$(extra "$3" throughput)" \
		-v busy="$(extra "$3" serverCpuCoresBusy)" \
		'BEGIN { printf "| %d | %s | %.1f µs | %.2f | %.2f / %.2f ms | %s | %s | %s | %s | %.0f/s |\n", n, who, c, busy, p50, p99,
			epc == "" ? "–" : sprintf("%.1f", epc), f == "" ? "–" : sprintf("%.3f", f), w == "" ? "–" : sprintf("%.2f", w),
			a == "" ? "–" : sprintf("%.1f (%.0f B)", a, b), t }'
}
run_live_comparison() {
	local linger=${BENCH_LIVE_LINGER:-${BENCH_COMMIT_LINGER:-2ms}}
	local f0="http://127.0.0.1:${LIVE_PORTS[0]}" fl="http://127.0.0.1:${LIVE_PORTS[1]}"
	bin/harness-floor -listen "127.0.0.1:${LIVE_PORTS[0]}" -data-dir "$WORK/livefloor0" >"$WORK/livefloor0.log" 2>&1 &
	LIVE_FLOOR0_PID=$!
	bin/harness-floor -listen "127.0.0.1:${LIVE_PORTS[1]}" -data-dir "$WORK/livefloorL" -linger "$linger" >"$WORK/livefloorL.log" 2>&1 &
	LIVE_FLOORL_PID=$!
	for u in "$f0" "$fl"; do
		for _ in $(seq 1 100); do curl -fsS "$u/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
	done
	local cmd="bin/harness-load -phases live ${BENCH_LIVE_FLAGS:-}"
	local r0=() rl=() lag=()
	for round in $(seq 1 "${BENCH_LIVE_ROUNDS:-3}"); do
		local load
		load=$(cut -d' ' -f1 /proc/loadavg)
		log "live comparison, round $round: floor (no linger), floor (linger $linger), then the server ($cmd)"
		$cmd -url "$f0" -admin "$f0" -server-pid "$LIVE_FLOOR0_PID" -json "$WORK/live-floor0-$round.json" 2>>"$WORK/live-load.log"
		$cmd -url "$fl" -admin "$fl" -server-pid "$LIVE_FLOORL_PID" -json "$WORK/live-floorL-$round.json" 2>>"$WORK/live-load.log"
		$cmd -url "$BASE" -admin "$ADMIN" -server-pid "$CADDY_PID" -json "$WORK/live-ours-$round.json" 2>>"$WORK/live-load.log"
		local c0 cl co
		c0=$(extra "$WORK/live-floor0-$round.json" serverCpuUsPerEvent)
		cl=$(extra "$WORK/live-floorL-$round.json" serverCpuUsPerEvent)
		co=$(extra "$WORK/live-ours-$round.json" serverCpuUsPerEvent)
		r0+=("$(ratio "$co" "$c0")")
		rl+=("$(ratio "$co" "$cl")")
		lag+=("$(extra "$WORK/live-ours-$round.json" lagP99Ms)")
		LIVE_ROWS+="| $round | $load | ${rl[-1]} | ${r0[-1]} | ${lag[-1]} ms |"$'\n'
		LIVE_DETAIL_ROWS+="$(live_detail "$round" "floor, no linger" "$WORK/live-floor0-$round.json")"$'\n'
		LIVE_DETAIL_ROWS+="$(live_detail "$round" "floor, linger $linger" "$WORK/live-floorL-$round.json")"$'\n'
		LIVE_DETAIL_ROWS+="$(live_detail "$round" harness-edge "$WORK/live-ours-$round.json")"$'\n'
		log "live comparison, round $round: server CPU per event ${rl[-1]}× the floor with linger, ${r0[-1]}× without; lag p99 ${lag[-1]} ms"
	done
	kill "$LIVE_FLOOR0_PID" "$LIVE_FLOORL_PID" 2>/dev/null || true
	wait "$LIVE_FLOOR0_PID" "$LIVE_FLOORL_PID" 2>/dev/null || true
	LIVE_FLOOR0_PID= LIVE_FLOORL_PID=
	LIVE_SUMMARY="Live streams (issue 46; medians of ${#rl[@]} rounds): server CPU per delivered event **$(median "${rl[@]}")× the live floor's with linger $linger**, **$(median "${r0[@]}")× without**; our lag p99 $(median "${lag[@]}") ms. Each round: \`$cmd\` against the floor without linger, the floor with \`-linger $linger\`, then \`bin/caddy\`."
	log "$LIVE_SUMMARY"
}

# write_live_section prints the live comparison's Markdown (nothing when it did not run).
write_live_section() {
	[[ -n $LIVE_ROWS ]] || return 0
	echo "$LIVE_SUMMARY"
	echo
	echo "| round | load | ours ÷ floor with linger | ours ÷ floor without | our lag p99 |"
	echo "| --- | --- | --- | --- | --- |"
	printf '%s' "$LIVE_ROWS"
	echo
	echo "Per delivered event (fsyncs: two per store commit, per event produced; writes from \`/proc/<pid>/io\`; allocations from the Go counters):"
	echo
	echo "| round | server | CPU | cores busy | lag p50 / p99 | events per commit | fsyncs | writes | allocations | events/s |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	printf '%s' "$LIVE_DETAIL_ROWS"
	echo
}

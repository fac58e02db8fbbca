#!/usr/bin/env bash
# make bench-growth: the cost of the next execution as the store grows (issue 27, "Cost as the
# work grows"). For each size in GROWTH_SIZES and each build in GROWTH_BINS: seed a fresh bbolt
# store with that many finished executions (harness-seed, straight through the store API), time
# the listing's first page on it (harness-seed -list-samples), serve it with that build's caddy
# and run harness-load's e2e phase (start, then stream: POST → 202 is the start latency). Prints
# one Markdown row per size and build; builds of one size run back to back, so compare them
# within a size. Benchmarks, not tests: figures move with the machine's load.
#
# Environment (all optional):
#   GROWTH_SIZES     sizes to measure (default "10000 100000 1000000")
#   GROWTH_BINS      directories holding caddy, harness-load and harness-seed, one build each
#                    (default: this tree's, built into bin/); e.g. "bin/before bin/after"
#   GROWTH_DURATION  e2e phase per run (default 15s)
#   GROWTH_ROUNDS    e2e runs per size and build (default 2; the row shows the median by CPU)
#   GROWTH_KEEP=1    keep the temporary directory
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
log() { printf 'bench-growth: %s\n' "$*" >&2; }

BINS=${GROWTH_BINS:-bin}
if [[ -z ${GROWTH_BINS:-} ]]; then
	mkdir -p bin
	$GO build -o bin/caddy ./cmd/caddy
	$GO build -o bin/harness-load ./cmd/harness-load
	$GO build -o bin/harness-seed ./cmd/harness-seed
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/harness-growth.XXXXXX")
CADDY_PID=
cleanup() {
	if [[ -n $CADDY_PID ]]; then kill "$CADDY_PID" 2>/dev/null || true; wait "$CADDY_PID" 2>/dev/null || true; fi
	if [[ ${GROWTH_KEEP:-0} == 1 ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
extra() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
listed() { awk -v q="$2" '$2 == q { sub("p50_us=", "", $4); sub("p99_us=", "", $5); print $4 " / " $5 }' "$1"; }

echo "| stored | build | load | server CPU µs per execution | POST → 202 p50 / p99 ms | executions/s | writes, allocations (KB) per execution | list first page p50 / p99 µs: all; one conversation | file MiB |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for size in ${GROWTH_SIZES:-10000 100000 1000000}; do
	for bin in $BINS; do
		tag=$(basename "$bin")
		data="$WORK/data-$size-$tag"
		log "$tag: seeding $size executions into $data"
		"$bin/harness-seed" -data-dir "$data" -executions "$size" -list-samples 2000 >"$WORK/seed-$size-$tag.txt"
		mapfile -t PORTS < <("$bin/harness-load" -free-ports 2)
		cat >"$WORK/Caddyfile" <<CADDY
{
	admin 127.0.0.1:${PORTS[1]}
	log {
		level WARN
	}
}
:${PORTS[0]} {
	bind 127.0.0.1
	harness {
		data_dir $data
		provider mock
	}
}
CADDY
		"$bin/caddy" run --config "$WORK/Caddyfile" --adapter caddyfile >"$WORK/caddy-$size-$tag.log" 2>&1 &
		CADDY_PID=$!
		for _ in $(seq 1 600); do
			curl -fsS "http://127.0.0.1:${PORTS[0]}/healthz" >/dev/null 2>&1 && break
			sleep 0.1
		done
		rows=()
		load=$(cut -d' ' -f1 /proc/loadavg)
		for round in $(seq 1 "${GROWTH_ROUNDS:-2}"); do
			j="$WORK/load-$size-$tag-$round.json"
			"$bin/harness-load" -url "http://127.0.0.1:${PORTS[0]}" -admin "http://127.0.0.1:${PORTS[1]}" -server-pid "$CADDY_PID" \
				-phases e2e -e2e-start separate -e2e-duration "${GROWTH_DURATION:-15s}" -json "$j" 2>>"$WORK/load.log"
			rows+=("$(extra "$j" serverCpuUsPerExec) $(extra "$j" startP50Ms) $(extra "$j" startP99Ms) $(extra "$j" throughput) $(extra "$j" serverWriteSyscallsPerExec) $(extra "$j" serverAllocsPerExec) $(extra "$j" serverAllocBytesPerExec)")
		done
		kill "$CADDY_PID"
		wait "$CADDY_PID" 2>/dev/null || true
		CADDY_PID=
		median=$(printf '%s\n' "${rows[@]}" | sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }')
		mib=$(du -m "$data/harness.db" | cut -f1)
		read -r cpu p50 p99 tput writes allocs bytes <<<"$median"
		printf '| %s | %s | %s | %.0f | %.2f / %.2f | %.0f | %.1f, %.0f (%.1f) | %s; %s | %s |\n' "$size" "$tag" "$load" "$cpu" "$p50" "$p99" "$tput" \
			"${writes:-0}" "${allocs:-0}" "$(awk -v b="${bytes:-0}" 'BEGIN { print b / 1000 }')" \
			"$(listed "$WORK/seed-$size-$tag.txt" all)" "$(listed "$WORK/seed-$size-$tag.txt" conversation)" "$mib"
		rm -rf "$data"
	done
done

#!/usr/bin/env bash
# make bench-growth: the cost of the next execution as the store grows (issue 27, "Cost as the
# work grows"). For each size in GROWTH_SIZES: seed a fresh bbolt store with that many finished
# executions (bin/harness-seed, straight through the store API), time the listing's first page on
# it (harness-seed -list-samples), serve it with bin/caddy and run harness-load's e2e phase
# (start, then stream: POST → 202 latency is the start latency). Prints one Markdown row per size.
# Benchmarks, not tests: figures move with the machine's load; compare rows of one run.
#
# Environment (all optional):
#   GROWTH_SIZES     sizes to measure (default "10000 100000 1000000")
#   GROWTH_DURATION  e2e phase per size (default 15s)
#   GROWTH_ROUNDS    e2e runs per size (default 2; the row shows the median run by CPU)
#   GROWTH_KEEP=1    keep the temporary directory
#   GROWTH_BIN       take caddy, harness-load and harness-seed from this directory instead of
#                    building them into bin/ (to measure another commit's build)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
log() { printf 'bench-growth: %s\n' "$*" >&2; }

BIN=${GROWTH_BIN:-bin}
if [[ -z ${GROWTH_BIN:-} ]]; then
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
extra() { sed -n "s/.*\"$2\": *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }

echo "| stored | server CPU µs per execution | POST → 202 p50 / p99 ms | executions/s | list first page p50 / p99 µs (all; one conversation) | file MiB |"
echo "| --- | --- | --- | --- | --- | --- |"
for size in ${GROWTH_SIZES:-10000 100000 1000000}; do
	data="$WORK/data-$size"
	log "seeding $size executions into $data"
	"$BIN/harness-seed" -data-dir "$data" -executions "$size" -list-samples 2000 >"$WORK/seed-$size.txt"
	mapfile -t PORTS < <("$BIN/harness-load" -free-ports 2)
	cat >"$WORK/Caddyfile-$size" <<CADDY
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
	"$BIN/caddy" run --config "$WORK/Caddyfile-$size" --adapter caddyfile >"$WORK/caddy-$size.log" 2>&1 &
	CADDY_PID=$!
	for _ in $(seq 1 600); do
		curl -fsS "http://127.0.0.1:${PORTS[0]}/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	rows=()
	for round in $(seq 1 "${GROWTH_ROUNDS:-2}"); do
		"$BIN/harness-load" -url "http://127.0.0.1:${PORTS[0]}" -admin "http://127.0.0.1:${PORTS[1]}" -server-pid "$CADDY_PID" \
			-phases e2e -e2e-start separate -e2e-duration "${GROWTH_DURATION:-15s}" -json "$WORK/load-$size-$round.json" 2>>"$WORK/load.log"
		j="$WORK/load-$size-$round.json"
		rows+=("$(extra "$j" serverCpuUsPerExec) $(extra "$j" startP50Ms) $(extra "$j" startP99Ms) $(extra "$j" throughput)")
	done
	kill "$CADDY_PID"; wait "$CADDY_PID" 2>/dev/null || true; CADDY_PID=
	median=$(printf '%s\n' "${rows[@]}" | sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }')
	list_all=$(awk '/list-first-page all/ { sub("p50_us=", "", $4); sub("p99_us=", "", $5); print $4 " / " $5 }' "$WORK/seed-$size.txt")
	list_conv=$(awk '/list-first-page conversation/ { sub("p50_us=", "", $4); sub("p99_us=", "", $5); print $4 " / " $5 }' "$WORK/seed-$size.txt")
	mib=$(du -m "$data/harness.db" | cut -f1)
	read -r cpu p50 p99 tput <<<"$median"
	printf '| %s | %.0f | %.2f / %.2f | %.0f | %s; %s | %s |\n' "$size" "$cpu" "$p50" "$p99" "$tput" "$list_all" "$list_conv" "$mib"
	rm -rf "$data"
done

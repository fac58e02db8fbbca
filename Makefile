# harness-edge — every task a newcomer or CI needs. `make run` and `make test` are all you need.
SHELL := /bin/bash
GO ?= go
BIN := bin
# The repository's modules (go.work joins them for development): the server at the root, the SDK,
# the Caddy module and the custom Caddy binary. `./...` stops at a nested go.mod, so every target
# names them all; in workspace mode one command covers the four.
MODULES := . sdk caddymodule cmd/caddy
PKGS := ./... ./sdk/... ./caddymodule/... ./cmd/caddy/...
# harnessctl --version: the project's version (openapi/harness.yaml's info.version, which the
# runtime reports too) and the commit, "-dirty" when the tree has uncommitted changes.
VERSION := $(shell sed -n 's/^  version: //p' openapi/harness.yaml)
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
LDFLAGS := -X main.buildVersion=$(VERSION) -X main.buildCommit=$(COMMIT)

.PHONY: all generate build test check run bench bench-growth bench-cluster bench-streams faults nemesis nemesis-known-fault fmt tidy-check generate-check

all: build

## generate: regenerate sdk/api from openapi/harness.yaml (oapi-codegen v2.8.2, pinned in openapi/tools.go.mod),
## and the protocol facts beside it (openapi/factsgen: sdk/api/facts.gen.go, console/static/facts.gen.js)
# GOWORK=off: the generator runs with -modfile (its own tools.go.mod), which workspace mode refuses.
generate:
	GOWORK=off $(GO) generate ./openapi/

## build: compile every package of every module and the binaries into bin/
build:
	$(GO) build $(PKGS)
	$(GO) build -o $(BIN)/caddy ./cmd/caddy
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/harnessctl ./cmd/harnessctl

## test: go vet, then every test of every module under the race detector; then the SDK's own
## tests once more outside the workspace, on the minimum dependency versions its go.mod states;
## ends with a summary: passed, failed, skipped and why
test:
	$(GO) vet $(PKGS)
	$(GO) build -o $(BIN)/testsummary ./scripts/testsummary
	set -o pipefail; { $(GO) test -json -race -count=1 -timeout 30m $(PKGS); (cd sdk && GOWORK=off $(GO) test -json -race -count=1 ./...); } | $(BIN)/testsummary

## check: generated code is fresh, code is gofmt'ed, every module's go.mod is tidy
check: generate-check fmt tidy-check

generate-check: generate
	@git diff --exit-code -- sdk/api openapi console/static/facts.gen.js || { echo "make generate changed the generated code: commit it"; exit 1; }

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt'ed:"; echo "$$out"; exit 1; fi

# `go mod tidy` ignores go.work: each module is tidied on its own go.mod (replace directives point
# at the sibling modules until their first release, docs/releasing.md).
tidy-check:
	@set -e; for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy); done
	@git diff --exit-code -- $(foreach m,$(MODULES),$(m)/go.mod $(m)/go.sum) || { echo "go mod tidy changed a go.mod/go.sum: commit it"; exit 1; }

## run: build bin/caddy and serve the protocol on http://127.0.0.1:4310 (examples/Caddyfile, mock provider)
run:
	@echo "building $(BIN)/caddy (the first build of Caddy takes up to ~16 min on a busy 2-core machine; later ones seconds)"
	$(GO) build -o $(BIN)/caddy ./cmd/caddy
	@mkdir -p data
	@echo "starting: Caddy logs \"Harness Runtime API listening on http://127.0.0.1:$${HARNESS_PORT:-4310}\" when ready; Ctrl-C stops"
	./$(BIN)/caddy run --config examples/Caddyfile --adapter caddyfile

## bench: Go benchmarks + the load tool against bin/caddy on a temporary store; writes the end of docs/performance-log.md (not CI; ~12 min; BENCH_LOAD_FLAGS to scale down)
bench:
	GO=$(GO) ./scripts/bench.sh

## bench-growth: CPU per execution, start p99 and the listing's first page with 10k, 100k and 1M executions already stored (bin/harness-seed; not CI; prints a table)
bench-growth:
	GO=$(GO) ./scripts/bench-growth.sh

## bench-cluster: the "Several nodes" figures: a throw-away PostgreSQL 15, two nodes and the balancer, then the load tool (not CI; prints, writes nothing)
bench-cluster:
	GO=$(GO) ./scripts/bench-cluster.sh

## bench-streams: issue 46's stream targets: 1,000 conversation + 200 tenant subscribers on one node, then 100 + 20 through two PostgreSQL nodes, at execution rates stepped up until the server is one core busy; a table per set-up and the server's CPU profile (not CI; prints, writes nothing; ~10 min)
bench-streams:
	GO=$(GO) ./scripts/bench_streams.sh

## faults: the fault-injection suite in full (faults/, HARNESS_FAULTS=full: a takeover of 5,000 running executions, 20 s stalls, lease 10 s) on a throw-away PostgreSQL 15 and real nodes; prints each fault's figures (not CI; `make test` runs the lean form)
faults:
	HARNESS_FAULTS=full $(GO) test -count=1 -timeout 60m -run TestFaults -v ./faults/

## nemesis: harness-nemesis for DURATION (default 1h) with a random seed (printed; SEED=n replays one) on three nodes over a throw-away PostgreSQL 15 (STORE=bolt: one node); checks the history and exits non-zero with the violations and the replay command (not CI; `make test` runs the lean schedule, docs/nemesis.md)
DURATION ?= 1h
SEED ?= 0
STORE ?= postgres
nemesis:
	$(GO) build -o $(BIN)/caddy ./cmd/caddy
	$(GO) build -o $(BIN)/harness-nemesis ./cmd/harness-nemesis
	./$(BIN)/harness-nemesis -seed $(SEED) -duration $(DURATION) -store $(STORE) -caddy $(BIN)/caddy

## nemesis-known-fault: the demonstration that the nemesis finds a known bug: issue 44's claim fix undone in a test build (-tags nemesis_knownfault), stated seeds each find the stranded execution (not CI; ~7 min)
nemesis-known-fault:
	HARNESS_NEMESIS=full $(GO) test -count=1 -timeout 30m -run TestFindsTheKnownFault -v ./cmd/harness-nemesis/

// Command harness-floor is the yardstick of `make bench`: a plain net/http server that does the
// same wire work as one end-to-end execution of harness-edge — and nothing else — so that the
// server's CPU per execution can be reported as a ratio to what this machine needs at the least,
// measured in the same run under the same load tool, instead of as an absolute time on a shared
// machine (docs/performance-log.md, "The floor").
//
// Per execution, in one request (POST /v1/executions asking for text/event-stream, as the SDK's
// Run does): read the ~150-byte JSON start body and decode it, write the execution's durable
// state (its record and its 7 events, ~2 KiB) with one bbolt Put through a group commit synced
// like harness-edge's store (same bbolt options), then send the same 7 SSE frames harness-edge
// sends, in one write, and the final snapshot in the trailer Harness-Execution. The portable way
// (POST /v1/executions asking for JSON, then GET /v1/executions/{id}/events as SSE, what every
// client but the Go SDK's Run does): the same decode and Put, a 202 with the queued execution,
// then the 7 frames from memory with the headers in one write. There is no provider, no
// validation beyond the decode, no idempotency record, no index, no listing: it is a floor, not
// a server. It answers just enough of the protocol for harness-load's e2e phase (GET /healthz,
// POST /v1/conversations) and serves GET /metrics with the Go allocation counters and the
// commit histogram that the load tool reads from harness-edge's admin endpoint.
//
//	harness-floor -listen 127.0.0.1:4390 -data-dir /tmp/floor
//
// Live mode (issue 46): a start whose config has delayMs > 0, asked for with a 202, runs as the
// mock runs it — one delta per word, delayMs apart — each event durable through its own Put in
// the group commit (-linger: how long a commit waits for more) and then written to the
// execution's streams as it comes (live.go).
//
// It only listens on loopback addresses.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:4390", "loopback address to listen on")
	dataDir := flag.String("data-dir", "", "directory of the bbolt file (created if missing; required)")
	noSync := flag.Bool("no-sync", false, "measurement only: commit without fdatasync (bbolt NoSync), to see what durability costs; a crash loses data")
	linger := flag.Duration("linger", 0, "how long a group commit waits for more events from its first one's arrival (set it to harness-edge's commit_linger to compare like with like)")
	flag.Parse()
	if err := run(*listen, *dataDir, *noSync, *linger); err != nil {
		fmt.Fprintln(os.Stderr, "harness-floor:", err)
		os.Exit(1)
	}
}

func run(listen, dataDir string, noSync bool, linger time.Duration) error {
	if dataDir == "" {
		return errors.New("-data-dir is required")
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: only loopback addresses (it is a measuring tool)", listen)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	store, err := openStoreLinger(filepath.Join(dataDir, "floor.db"), noSync, linger)
	if err != nil {
		return err
	}
	defer store.close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(store), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "harness-floor listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

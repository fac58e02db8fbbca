package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Wake-ups across nodes. Every commit that wrote events, every posted command and every answer
// sends a NOTIFY on notifyChannel inside its transaction; each Store holds one dedicated LISTEN
// connection (pgxlisten: reconnects after a drop) and hands each notification to the functions
// given to Watch.
//
// Notifications are not a log: while the connection is down they are lost. So a receiver
// treats a Notice as "look again", never as the data: it re-reads the store from its own cursor
// (events after the last sequence it saw, pending commands, the command's result). And after
// every reconnect the watcher sends one catch-all Notice of each kind — events with
// ExecutionID "", command and result with CommandID 0 — meaning "anything may have changed
// while I was away": receivers re-read everything they wait for. A missed notice only delays.

// Payloads, small and cheap to parse: "e <sequence> <execution id>", "c <command id> <node>",
// "r <command id>". The events' payload is made in SQL (flush.go, notify), of the columns id
// and seq: int8's text is its decimal digits, as strconv.FormatInt writes them.
const eventsPayload = `'e ' || seq || ' ' || id`

func commandPayload(node string, id int64) string {
	return "c " + strconv.FormatInt(id, 10) + " " + node
}

func resultPayload(id int64) string { return "r " + strconv.FormatInt(id, 10) }

// parseNotice decodes a payload; ok is false for one this node ignores (another node's command,
// or a form it does not know).
func parseNotice(payload, node string) (n store.Notice, ok bool) {
	kind, rest, _ := strings.Cut(payload, " ")
	num, arg, _ := strings.Cut(rest, " ")
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return n, false
	}
	switch kind {
	case "e":
		return store.Notice{Kind: store.NoticeEvents, ExecutionID: arg, Sequence: v}, arg != ""
	case "c":
		return store.Notice{Kind: store.NoticeCommand, CommandID: v}, arg == node
	case "r":
		return store.Notice{Kind: store.NoticeResult, CommandID: v}, true
	}
	return n, false
}

// catchAll are the notices sent after a reconnect (see above).
var catchAll = []store.Notice{{Kind: store.NoticeEvents}, {Kind: store.NoticeCommand}, {Kind: store.NoticeResult}}

type watcher struct {
	node string
	stop context.CancelFunc
	done chan struct{}

	mu    sync.Mutex
	fns   map[int]func(store.Notice)
	next  int
	ready chan struct{} // closed once the first LISTEN took effect
	once  sync.Once
}

// startWatcher connects the LISTEN connection and returns once it listens: a commit after
// Open returned is never missed for want of a listener.
func startWatcher(ctx context.Context, connCfg *pgx.ConnConfig, node string, logError func(error)) (*watcher, error) {
	lctx, stop := context.WithCancel(context.Background())
	w := &watcher{node: node, stop: stop, done: make(chan struct{}), fns: map[int]func(store.Notice){}, ready: make(chan struct{})}
	var lastErr error
	var errMu sync.Mutex
	l := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, connCfg.Copy()) },
		LogError: func(_ context.Context, err error) {
			if lctx.Err() != nil {
				return // closing
			}
			errMu.Lock()
			lastErr = err
			errMu.Unlock()
			logError(fmt.Errorf("postgres store: listen for other nodes' commits (reconnecting; wake-ups are delayed meanwhile): %w", err))
		},
		ReconnectDelay: time.Second,
	}
	l.Handle(notifyChannel, w)
	go func() {
		defer close(w.done)
		l.Listen(lctx)
	}()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case <-w.ready:
		return w, nil
	case <-ctx.Done():
		w.close()
		return nil, ctx.Err()
	case <-timeout.C:
		w.close()
		errMu.Lock()
		defer errMu.Unlock()
		return nil, errors.Join(errors.New("no LISTEN connection after 30s"), lastErr)
	}
}

// HandleBacklog runs after each (re)connect's LISTEN: the first time it reports ready, later
// it sends the catch-all notices.
func (w *watcher) HandleBacklog(context.Context, string, *pgx.Conn) error {
	first := false
	w.once.Do(func() { first = true; close(w.ready) })
	if !first {
		for _, n := range catchAll {
			w.dispatch(n)
		}
	}
	return nil
}

func (w *watcher) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	if notice, ok := parseNotice(n.Payload, w.node); ok {
		w.dispatch(notice)
	}
	return nil
}

func (w *watcher) dispatch(n store.Notice) {
	w.mu.Lock()
	fns := make([]func(store.Notice), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(n)
	}
}

func (w *watcher) add(fn func(store.Notice)) (stop func()) {
	w.mu.Lock()
	id := w.next
	w.next++
	w.fns[id] = fn
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.fns, id)
		w.mu.Unlock()
	}
}

func (w *watcher) close() {
	w.stop()
	<-w.done
}

// Watch calls fn for every wake-up until stop is called: commits of events on any node
// (this one included), commands posted for this node, answers to any command — and, after a
// reconnect of the listening connection, one catch-all notice of each kind (ExecutionID "",
// CommandID 0) that means "re-read everything". fn runs on the listener's goroutine: it must be
// quick and must not block (hand the notice to a channel or wake a cursor).
func (s *Store) Watch(fn func(store.Notice)) (stop func()) { return s.watch.add(fn) }

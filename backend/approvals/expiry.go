package approvals

import (
	"context"
	"log/slog"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// Expiry fails closed: an action whose expiresAt passed unanswered is answered reject, by the
// actor expiry. The deadline is in the store (store.ActionRecords.DueActions reads the earliest
// ones), so it survives a restart and a takeover: the loop reads it again on every wake, and the
// runtime wakes it when it opens an action with a deadline and when it has resumed executions.
// Answering goes through the runtime's handles (Host.Expire), so an action of an execution that
// another node runs is answered by that node, and the one-winner rule of a raced answer holds
// between a person, a rule and the expiry. A node that cannot vouch for its lease expires
// nothing (another node will, or this one once it can again).

// Host is what the expiry loop asks of the runtime.
type Host interface {
	// Expire answers a reject as the actor expiry. An action that is no longer pending (someone
	// answered first, the execution ended) is not an error.
	Expire(ctx context.Context, a store.Action) error
	// Vouches reports whether this node may act now (on a shared store: its lease is sure).
	Vouches() bool
}

// Expiry is the loop; Run it in the runtime's loops.
type Expiry struct {
	actions interface {
		DueActions(now time.Time, limit int) ([]store.Action, time.Time, error)
	}
	host    Host
	log     *slog.Logger
	maxWait time.Duration
	wake    chan struct{}
	retry   map[string]retry // actions whose answer failed, until they may be tried again
}

type retry struct {
	at   time.Time
	wait time.Duration
}

// Expiry's bounds: how many due actions one pass answers, how long a failed answer waits before
// the next try (doubling up to a minute), and the default longest sleep (a store shared by
// several nodes: another node's new deadline is seen within it even if nothing wakes this one).
const (
	expiryBatch       = 64
	expiryRetryMin    = time.Second
	expiryRetryMax    = time.Minute
	DefaultExpiryPoll = 30 * time.Second
)

// NewExpiry makes the loop over actions' deadlines. maxWait bounds each sleep (0: the default).
func NewExpiry(actions store.ActionRecords, host Host, log *slog.Logger, maxWait time.Duration) *Expiry {
	if maxWait <= 0 {
		maxWait = DefaultExpiryPoll
	}
	return &Expiry{actions: actions, host: host, log: log, maxWait: maxWait, wake: make(chan struct{}, 1), retry: map[string]retry{}}
}

// Wake makes the loop read the deadlines again now (a new one may be earlier than its sleep).
func (e *Expiry) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run expires due actions until stop is closed.
func (e *Expiry) Run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-e.wake:
		case <-timer.C:
		}
		wait := e.pass(ctx, time.Now())
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// pass answers what is due at now and returns how long to sleep.
func (e *Expiry) pass(ctx context.Context, now time.Time) time.Duration {
	wait := e.maxWait
	if !e.host.Vouches() {
		return min(wait, expiryRetryMin)
	}
	due, next, err := e.actions.DueActions(now, expiryBatch)
	if err != nil {
		e.log.Warn("read the actions' deadlines", "err", err)
		return expiryRetryMin
	}
	seen := make(map[string]bool, len(due))
	tried := 0
	for _, a := range due {
		id := a.Request.ID
		seen[id] = true
		if r, ok := e.retry[id]; ok && r.at.After(now) {
			wait = min(wait, r.at.Sub(now))
			continue
		}
		if ctx.Err() != nil {
			return 0
		}
		tried++
		if err := e.host.Expire(ctx, a); err != nil {
			r := e.retry[id]
			r.wait = min(max(2*r.wait, expiryRetryMin), expiryRetryMax)
			r.at = now.Add(r.wait)
			e.retry[id] = r
			wait = min(wait, r.wait)
			e.log.Warn("expire an action", "execution", a.Request.ExecutionID, "action", id, "err", err, "retryIn", r.wait)
			continue
		}
		delete(e.retry, id)
	}
	for id := range e.retry {
		if !seen[id] {
			delete(e.retry, id) // answered, or no longer due on this page
		}
	}
	// A next deadline already past (the page was full) is read again at once, unless nothing on
	// this page could be tried: then the retries set the pace.
	if !next.IsZero() && (next.After(now) || tried > 0) {
		if until := next.Sub(time.Now()); until < wait {
			wait = max(until, time.Millisecond)
		}
	}
	return wait
}

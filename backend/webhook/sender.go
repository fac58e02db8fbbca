package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/internal/loops"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// sender delivers the outbox. One dispatcher scans it for lane heads that are due and
// hands them to a bounded pool of workers; a lane (execution × target) has at most one
// notification in flight, so each receiver sees an execution's notifications in order, while
// different executions are delivered concurrently. The sender only reads the outbox and commits
// outcomes: an execution never waits for it.
//
// Retries are durable (attempt count and next attempt are in the row), which is why this is not
// an in-process retrying HTTP client: a retry survives a restart and never holds a worker.
type sender struct {
	store    store.Store
	targets  map[[store.TargetIDLen]byte]*target
	policy   Delivery
	client   *http.Client
	log      *slog.Logger
	observer Observer     // nil: none
	tracer   trace.Tracer // the attempts' spans (tracing.go)

	wake chan struct{} // capacity 1
	work chan store.Notification
	// loops are the dispatcher and the workers; their context is the requests': stopping ends
	// the requests in flight, and their rows stay as they were.
	loops loops.Group

	mu     sync.Mutex
	flying map[string]bool // lanes with a notification in flight, or whose outcome a scan may not see yet
	// landed are lanes whose outcome is committed. They stay in flying until the next scan
	// begins: a scan already running reads a snapshot from before the outcome and would send
	// the same notification again.
	landed []string
}

func newSender(targets map[[store.TargetIDLen]byte]*target, policy Delivery, log *slog.Logger, obs Observer, tp trace.TracerProvider) *sender {
	return &sender{
		tracer:  tp.Tracer(tracerName),
		targets: targets,
		policy:  policy,
		client: &http.Client{
			Timeout: policy.Timeout,
			// A redirect is an answer like any other non-2xx: retried, never followed, so a
			// signed payload only goes where it was configured to go.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log:      log,
		observer: obs,
		wake:     make(chan struct{}, 1),
		work:     make(chan store.Notification),
		flying:   map[string]bool{},
	}
}

// poke wakes the dispatcher; never blocks (called on the store's commit goroutine).
func (s *sender) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// start begins delivering st's outbox.
func (s *sender) start(st store.Store) {
	s.store = st
	s.loops.Go("webhook-dispatch", s.dispatch)
	for range s.policy.Workers {
		s.loops.Go("webhook-worker", s.worker)
	}
	s.poke() // what the previous process left in the outbox
}

// stop ends the dispatcher and the workers and waits for them; called before the store closes.
func (s *sender) stop() {
	s.loops.Stop()
}

func (s *sender) busy(lane string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flying[lane]
}

// dispatch hands due notifications to the workers until stop; closing work then ends them.
func (s *sender) dispatch(stop <-chan struct{}) {
	defer close(s.work)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		for _, lane := range s.landed {
			delete(s.flying, lane)
		}
		s.landed = s.landed[:0]
		s.mu.Unlock()
		due, nextDue, oldest, err := s.store.OutboxHeads(time.Now(), s.busy, 4*s.policy.Workers)
		if err != nil {
			s.log.Error("webhook outbox scan", "err", err)
			nextDue = time.Now().Add(s.policy.MinBackoff)
		}
		if s.observer != nil {
			s.observer.WebhookQueueOldest(oldest)
		}
		for _, n := range due {
			s.mu.Lock()
			s.flying[n.Lane()] = true
			s.mu.Unlock()
			select {
			case s.work <- n:
			case <-stop:
				return
			}
		}
		if len(due) > 0 {
			continue // more may be due
		}
		wait := time.Hour
		if !nextDue.IsZero() {
			wait = max(time.Until(nextDue), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// worker delivers what dispatch hands it; it ends when dispatch closes work.
func (s *sender) worker(<-chan struct{}) {
	for n := range s.work {
		s.deliver(n)
		s.mu.Lock()
		s.landed = append(s.landed, n.Lane())
		s.mu.Unlock()
		s.poke() // the lane's next notification may be waiting
	}
}

// deliver makes one attempt and commits its outcome.
func (s *sender) deliver(n store.Notification) {
	t := s.targets[n.Target]
	outcome, reason := store.OutboxFailed, "subscription no longer configured"
	if t != nil {
		status, err := s.send(t, &n)
		if err != nil && s.loops.Context().Err() != nil {
			return // stopping cut it short: not an attempt; the row is sent again after the restart
		}
		outcome, reason = s.judge(&n, status, err)
	}
	host := "(removed)"
	if t != nil {
		host = t.host
	}
	now := time.Now()
	switch outcome {
	case store.OutboxDelivered:
		if s.observer != nil {
			s.observer.WebhookDelivered()
		}
	case store.OutboxRetry:
		n.NextAttempt = now.Add(s.backoff(n.Attempts))
		n.LastError = reason
		if s.observer != nil {
			s.observer.WebhookRetried()
		}
		s.log.Debug("webhook delivery will be retried", "host", host, "execution", n.ExecutionID, "sequence", n.Sequence, "attempts", n.Attempts, "reason", reason)
	case store.OutboxFailed:
		n.LastError = reason
		n.FailedAt = &now
		if s.observer != nil {
			s.observer.WebhookFailed()
		}
		s.log.Warn("webhook delivery failed", "host", host, "execution", n.ExecutionID, "sequence", n.Sequence, "attempts", n.Attempts, "reason", reason)
	}
	err := s.store.Commit(&store.Batch{OutboxResults: []store.OutboxResult{{Notification: n, Outcome: outcome}}})
	if err != nil && !errors.Is(err, store.ErrClosed) {
		s.log.Error("webhook outbox update", "host", host, "execution", n.ExecutionID, "err", err)
	}
}

// judge decides what an attempt's answer means. n.Attempts counts this attempt.
func (s *sender) judge(n *store.Notification, status int, err error) (store.OutboxOutcome, string) {
	n.Attempts++
	var reason string
	switch {
	case err != nil:
		reason = err.Error()
	case status >= 200 && status < 300:
		return store.OutboxDelivered, ""
	case status == http.StatusGone:
		// The receiver says the endpoint is gone: no retries for this notification. Later
		// notifications are still attempted; remove the subscription to stop them.
		return store.OutboxFailed, "410 Gone"
	default:
		reason = "HTTP " + strconv.Itoa(status)
	}
	if n.Attempts >= s.policy.MaxAttempts {
		return store.OutboxFailed, reason + " (attempt limit reached)"
	}
	if time.Since(n.CreatedAt) >= s.policy.MaxAge {
		return store.OutboxFailed, reason + " (age limit reached)"
	}
	return store.OutboxRetry, reason
}

// backoff is the delay before the next attempt after `attempts` failed ones: exponential,
// capped, with full jitter (uniform in [0, cap)), so receivers coming back are not stampeded.
func (s *sender) backoff(attempts int) time.Duration {
	ceiling := s.policy.MaxBackoff
	if attempts-1 < 32 {
		ceiling = min(s.policy.MinBackoff<<(attempts-1), s.policy.MaxBackoff)
		if ceiling <= 0 { // overflow
			ceiling = s.policy.MaxBackoff
		}
	}
	return rand.N(ceiling) + time.Millisecond
}

// send POSTs n to t, signed; it returns the status, or the error of a request without one.
// The response body is drained (a little) so the connection can be reused, and never logged.
func (s *sender) send(t *target, n *store.Notification) (int, error) {
	id := messageID(n.ExecutionID, n.Sequence)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := api.NewExecutionNotificationWebhookRequestWithBody(t.url, &api.ExecutionNotificationParams{
		WebhookID:        id,
		WebhookTimestamp: ts,
		WebhookSignature: sign(t.key, id, ts, n.Body),
	}, "application/json", bytes.NewReader(n.Body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", "harness-edge-webhooks")
	ctx, span := s.startDeliverySpan(s.loops.Context(), n, t.host)
	injectDeliveryTrace(ctx, req)
	resp, err := s.client.Do(req.WithContext(ctx))
	if err != nil {
		err = errors.New("request failed: " + requestError(err))
		endDeliverySpan(span, 0, err)
		return 0, err
	}
	endDeliverySpan(span, resp.StatusCode, nil)
	io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// requestError describes a transport failure without the URL, which may carry credentials in
// its path or query: the dial or TLS error names the address only.
func requestError(err error) string {
	var ue *url.Error
	switch {
	case errors.As(err, &ue) && ue.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case ue != nil:
		return ue.Err.Error()
	}
	return "connection error"
}

// sign is the Standard Webhooks v1 signature: base64 HMAC-SHA256 of "id.timestamp.body".
func sign(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

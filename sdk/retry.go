package sdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Which requests may be retried, and when.
//
// Every operation is safe to repeat except creating a conversation:
//   - reads (GET) change nothing;
//   - StartExecution always carries an idempotency key, so a repeat answers the same execution;
//   - CancelExecution is idempotent on the server (a second cancel returns the final snapshot);
//   - RespondToAction repeated after its first try was applied answers ACTION_ALREADY_RESOLVED,
//     which RespondToAction turns back into success (see there).
//
// A repeated CreateConversation would create a second conversation if the first was created and
// only its answer was lost (and a repeated CreateActionRule a second rule: it is treated alike). So it is retried only when the server certainly did not process it
// (the connection could not be opened, or the answer was 408, 429 or 503), or when it certainly
// did but its answer was cut short after a 2xx header: that conversation's id is lost, so a
// second one is the only way forward, and the lost one stays empty.
//
// A try's answer is read whole inside the retried round trip (transport.go), so a body cut
// short is a failure like a dropped connection, retried within the same policy.

type retryMode int

const (
	retryAmbiguous   retryMode = iota // the default: also retry after failures that may have been processed
	retryUnprocessed                  // only retry failures the server certainly did not act on
)

type retryModeKey struct{}

// withRetryMode marks the requests made with ctx.
func withRetryMode(ctx context.Context, m retryMode) context.Context {
	return context.WithValue(ctx, retryModeKey{}, m)
}

func retryModeOf(ctx context.Context) retryMode {
	m, _ := ctx.Value(retryModeKey{}).(retryMode)
	return m
}

// retryCounter counts the retries of the requests made with a context, so a caller can tell
// whether an answer came from a repeat of a request whose first try may have been applied.
type retryCounter struct{ n atomic.Int32 }

type retryCounterKey struct{}

func withRetryCounter(ctx context.Context) (context.Context, *retryCounter) {
	rc := &retryCounter{}
	return context.WithValue(ctx, retryCounterKey{}, rc), rc
}

func (rc *retryCounter) retried() bool { return rc.n.Load() > 0 }

// countRetry is retryablehttp's PrepareRetry hook: it runs before every repeat of a request.
func countRetry(req *http.Request) error {
	if rc, ok := req.Context().Value(retryCounterKey{}).(*retryCounter); ok {
		rc.n.Add(1)
	}
	return nil
}

// checkRetry is retryablehttp's CheckRetry: its DefaultRetryPolicy (connection errors, 429, 5xx
// except 501), plus 408, never once ctx is done, narrowed for requests in retryUnprocessed
// mode. It returns no error when it gives up on a response, so that PassthroughErrorHandler
// hands that response (and its Problem body) to the caller.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		if resp != nil {
			// Hand the response over as it is: a RoundTripper must not return a response and
			// an error together (net/http would log to stderr and drop the response).
			return false, nil
		}
		return false, ctx.Err()
	}
	retry, _ := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	if err == nil && resp.StatusCode == http.StatusRequestTimeout {
		retry = true
	}
	if retry && err == nil && budgetExceeded(resp) {
		return false, nil
	}
	if !retry || retryModeOf(ctx) == retryAmbiguous {
		return retry, nil
	}
	var cut *cutAnswerError
	if errors.As(err, &cut) {
		// A 2xx whose body was cut: the server did act, but the answer (a new
		// conversation's id) is lost, so nothing could ever use what it made; trying again
		// is what the caller would do. Other statuses follow the rule below.
		return cut.status/100 == 2 || unprocessedStatus(cut.status), nil
	}
	if err != nil {
		return isDialError(err), nil
	}
	return unprocessedStatus(resp.StatusCode), nil
}

// budgetExceeded reports a 429 BUDGET_EXCEEDED: its Retry-After is the end of a day or a month,
// which no retry should wait for. The Problem body is read (it is small) and put back for the
// caller.
func budgetExceeded(resp *http.Response) bool {
	if resp.StatusCode != http.StatusTooManyRequests || resp.Body == nil {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && bytes.Contains(body, []byte(`"BUDGET_EXCEEDED"`))
}

// unprocessedStatus reports whether an answer with this status says the server did not act
// on the request (and it may be tried again).
func unprocessedStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// isDialError reports whether err happened while opening the connection, before any byte of the
// request was sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryableStatus reports whether an answer with this status is worth another try: the same
// statuses checkRetry retries.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		(status >= 500 && status != http.StatusNotImplemented)
}

// backoff is how long to wait before retry number attempt (0 for the first retry) after resp
// (nil after a connection error): the server's Retry-After if it sent one, capped at
// MaxRetryAfter; otherwise MinWait·2^attempt capped at MaxWait, less a random quarter, so that
// clients that failed together do not come back together.
func (p RetryPolicy) backoff(attempt int, resp *http.Response) time.Duration {
	if hint, ok := retryAfter(resp); ok {
		return min(hint, p.MaxRetryAfter)
	}
	wait := p.MaxWait
	if attempt < 30 {
		wait = min(p.MinWait<<attempt, p.MaxWait)
	}
	if wait <= 0 {
		return p.MaxWait
	}
	return wait - rand.N(wait/4+1)
}

// retryablehttpBackoff adapts backoff to retryablehttp's Backoff signature; the policy, not
// the client's RetryWaitMin/Max, decides.
func (p RetryPolicy) retryablehttpBackoff(_, _ time.Duration, attempt int, resp *http.Response) time.Duration {
	return p.backoff(attempt, resp)
}

// retryAfter returns the wait a 429 or 503 asks for in Retry-After (seconds or an HTTP date).
// retryablehttp.DefaultBackoff returns exactly that when the header is there, and min·2^attempt
// otherwise; called with min = max = -1 the fallback is negative, which tells the two apart
// while keeping the library's parser the only one.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	d := retryablehttp.DefaultBackoff(-1, -1, 0, resp)
	return d, d >= 0
}

// sleep waits d or until ctx ends, and reports whether the whole wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

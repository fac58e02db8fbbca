package conversation

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestPolicies(t *testing.T) {
	for _, p := range []api.BusyPolicy{Parallel, Reject, Enqueue, Interrupt} {
		if !Valid(p) {
			t.Errorf("%s is not valid", p)
		}
	}
	for _, p := range []api.BusyPolicy{"", "rollback", "Reject", "enqueue "} {
		if Valid(p) {
			t.Errorf("%q is valid", p)
		}
	}
	if got := Allowed(); got != "parallel, reject, enqueue, interrupt" {
		t.Errorf("Allowed() = %q", got)
	}
	enqueue, reject := Enqueue, Reject
	for _, tc := range []struct {
		conversation, override *api.BusyPolicy
		want                   api.BusyPolicy
	}{{nil, nil, Parallel}, {&enqueue, nil, Enqueue}, {&enqueue, &reject, Reject}, {nil, &reject, Reject}} {
		if got := Effective(tc.conversation, tc.override); got != tc.want {
			t.Errorf("Effective(%v, %v) = %s, want %s", tc.conversation, tc.override, got, tc.want)
		}
	}
	if (PlanFor(Parallel) != Plan{}) || !PlanFor(Reject).Reject || PlanFor(Enqueue).Interrupt || !PlanFor(Interrupt).Interrupt || !PlanFor(Enqueue).Turn {
		t.Error("PlanFor")
	}
}

// executions is an in-memory Executions: AwaitEnd fails until an execution's failures are used
// up, then returns once it is ended; Cancel ends it.
type executions struct {
	mu        sync.Mutex
	ended     map[string]chan struct{}
	failures  map[string]int
	cancelled []string
	reasons   []string
}

func (e *executions) end(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.ended[id]:
	default:
		close(e.ended[id])
	}
}

func (e *executions) AwaitEnd(ctx context.Context, id string) error {
	e.mu.Lock()
	if e.failures[id] > 0 {
		e.failures[id]--
		e.mu.Unlock()
		return errors.New("store unavailable")
	}
	ended := e.ended[id]
	e.mu.Unlock()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *executions) Cancel(_ context.Context, id, reason string) error {
	e.mu.Lock()
	e.cancelled = append(e.cancelled, id)
	e.reasons = append(e.reasons, reason)
	e.mu.Unlock()
	e.end(id)
	return nil
}

func (e *executions) Warn(string, ...any) {}

func newExecutions(ids ...string) *executions {
	e := &executions{ended: map[string]chan struct{}{}, failures: map[string]int{}}
	for _, id := range ids {
		e.ended[id] = make(chan struct{})
	}
	return e
}

// AwaitTurn returns once every execution waited for has ended, asking again after an error;
// with interrupt it cancels each one, naming the newer execution; a context that ends first
// ends the wait with its error.
func TestAwaitTurn(t *testing.T) {
	ex := newExecutions("a", "b")
	ex.failures["b"] = 1
	done := make(chan error, 1)
	go func() { done <- AwaitTurn(t.Context(), ex, "c", []string{"a", "b"}, false) }()
	ex.end("b")
	select {
	case err := <-done:
		t.Fatalf("returned %v before a ended", err)
	default:
	}
	ex.end("a")
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ex = newExecutions("a", "b")
	if err := AwaitTurn(t.Context(), ex, "c", []string{"a", "b"}, true); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ex.cancelled)
	if !slices.Equal(ex.cancelled, []string{"a", "b"}) || ex.reasons[0] != "Interrupted by c" {
		t.Fatalf("cancelled %v with %v", ex.cancelled, ex.reasons)
	}

	ex = newExecutions("a")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := AwaitTurn(ctx, ex, "c", []string{"a"}, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("with its context ended: %v", err)
	}
}

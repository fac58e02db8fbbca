package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func executionID(n int) string    { return fmt.Sprintf("exec_%032x", n) }
func conversationID(n int) string { return fmt.Sprintf("conv_%032x", n) }

func execution(n int, state api.ExecutionState, owner string) store.Execution {
	at := time.Date(2026, 11, 30, 12, 0, n, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
	return store.Execution{
		Execution: api.Execution{
			ID: executionID(n), ConversationID: conversationID(1), ProviderID: "mock", State: state,
			Input: "hi", RequiredCapabilities: []string{}, EffectiveConfig: api.JSONObject{}, CreatedAt: at, UpdatedAt: at,
		},
		Owner: owner,
	}
}

// event is a stored event as the runtime encodes it (the type last).
func event(id string, seq int64, typ api.StandardEventType) store.StoredEvent {
	raw := fmt.Sprintf(`{"data":{},"executionId":%q,"id":"%s:%d","sequence":%d,"time":"2026-11-30T12:00:00.000Z","type":%q}`,
		id, id, seq, seq, typ)
	return store.StoredEvent{ExecutionID: id, Event: store.Event{Sequence: seq, Type: typ, JSON: []byte(raw)}}
}

func commit(t testing.TB, s store.Store, b *store.Batch) {
	t.Helper()
	if err := s.Commit(b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// notices collects what a Watch delivers.
type notices chan store.Notice

func watch(t *testing.T, s store.Cluster) notices {
	ch := make(notices, 1024)
	stop := s.Watch(func(n store.Notice) {
		select {
		case ch <- n:
		default:
			t.Errorf("notice %+v dropped: the test's buffer is full", n)
		}
	})
	t.Cleanup(stop)
	return ch
}

// await returns the first notice match accepts, failing t after a generous time.
func (ch notices) await(t *testing.T, what string, match func(store.Notice) bool) store.Notice {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case n := <-ch:
			if match(n) {
				return n
			}
		case <-timeout:
			t.Fatalf("no notice: %s", what)
		}
	}
}

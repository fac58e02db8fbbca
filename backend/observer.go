package backend

import (
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Observer receives metrics hooks. Calls are made synchronously from the runtime's goroutines and
// must return quickly; they never hold a runtime lock that would block a subscriber.
type Observer interface {
	ExecutionStarted(providerID string)
	ExecutionFinished(providerID string, state api.ExecutionState)
	EventsAppended(n int)
	StoreCommit(d time.Duration)
}

type noopObserver struct{}

func (noopObserver) ExecutionStarted(string) {}

func (noopObserver) ExecutionFinished(string, api.ExecutionState) {}

func (noopObserver) EventsAppended(int) {}

func (noopObserver) StoreCommit(time.Duration) {}

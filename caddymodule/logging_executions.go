package caddymodule

import (
	"log/slog"
	"sync"

	"github.com/harness-edge/harness-edge/backend"
)

// executionLogger gives a logger made before its runtime (a provider's, the webhooks') the
// fields every log line about an execution carries: execution_id, tenant and trace_id
// (backend.ExecutionLogHandler). They are found in whichever runtime of this process runs the
// execution, at the time of the line.
func executionLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(backend.ExecutionLogHandler(logger.Handler(), executionLogFields))
}

// openRuntimes are the process's open runtimes, for executionLogFields: a set of its own, not
// the pool, whose lock is held while a runtime opens (and a provider resuming an execution then
// may log).
var openRuntimes sync.Map // *backend.Runtime → struct{}

// executionLogFields looks id up in every open runtime of the process (usually one).
func executionLogFields(id string) (tenant, traceID string, ok bool) {
	openRuntimes.Range(func(key, _ any) bool {
		tenant, traceID, ok = key.(*backend.Runtime).ExecutionLogFields(id)
		return !ok
	})
	return tenant, traceID, ok
}

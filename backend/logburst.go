package backend

import (
	"log/slog"
	"time"

	"github.com/harness-edge/harness-edge/internal/logburst"
)

// storeErrorLogWindow is how often a burst of identical store errors is summarised.
const storeErrorLogWindow = 10 * time.Second

// burstLogger summarises the store's repeated errors (package logburst): a failing disk fails
// every change of every running execution.
type burstLogger = logburst.Logger

func newBurstLogger(log *slog.Logger, window time.Duration) *burstLogger {
	return logburst.New(log, window)
}

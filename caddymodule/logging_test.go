package caddymodule

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The runtime derives its loggers once; records must still reach the handler of the newest config.
func TestCurrentLoggerFollowsTheNewestConfig(t *testing.T) {
	var first, second bytes.Buffer
	current := newCurrentLogger(slog.NewTextHandler(&first, nil))
	derived := slog.New(current).With("execution", "exec_1").WithGroup("store")

	derived.Info("before the reload", "n", 1)
	current.follow(slog.NewTextHandler(&second, nil))
	derived.Info("after the reload", "n", 2)

	if got := first.String(); !strings.Contains(got, "before the reload") || strings.Contains(got, "after the reload") {
		t.Fatalf("first config's log: %q", got)
	}
	if got := second.String(); !strings.Contains(got, `msg="after the reload" execution=exec_1 store.n=2`) {
		t.Fatalf("second config's log: %q", got)
	}
}

package backend_test

import (
	"os"
	"testing"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		runCrashChild(dir) // never returns; the parent test kills it
	}
	if dir := os.Getenv(openChildEnv); dir != "" {
		runOpenChild(dir) // never returns
	}
	// The shared throw-away PostgreSQL (started by the first test that needs it) stops with the
	// tests.
	pgtest.Main(m)
}

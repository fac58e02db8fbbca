package proxy

import (
	"testing"

	"github.com/harness-edge/harness-edge/internal/pgtest"
)

// TestMain stops the throw-away PostgreSQL server the tests on that store start (pgtest).
func TestMain(m *testing.M) { pgtest.Main(m) }

// Package testutil holds small helpers the test suites of several packages share. It is
// imported only by _test.go files.
package testutil

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer that several goroutines may write while a test reads it: a log
// sink for a server or the output of a child process. The zero value is ready to use.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package backend

import (
	"fmt"
	"testing"
)

// ErrorCode is asked three times of every start's outcome (StartExecution: was it refused in
// the commit?), almost always of no error at all: that answer must not allocate (errors.As's
// target escaped, an allocation per call, three per start).
func TestErrorCodeOfNoErrorAllocatesNothing(t *testing.T) {
	if allocs := testing.AllocsPerRun(100, func() { _ = ErrorCode(nil) }); allocs != 0 {
		t.Fatalf("ErrorCode(nil) allocated %.0f times; want none", allocs)
	}
	if got := ErrorCode(nil); got != "" {
		t.Fatalf("ErrorCode(nil) = %q, want none", got)
	}
	wrapped := fmt.Errorf("committing: %w", newError(CodeConversationBusy, "busy"))
	if got := ErrorCode(wrapped); got != CodeConversationBusy {
		t.Fatalf("ErrorCode(wrapped busy) = %q, want %q", got, CodeConversationBusy)
	}
}

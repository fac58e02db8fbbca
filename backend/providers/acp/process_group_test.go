package acp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process the agent started must not outlive the execution: teardown reaches the agent's whole
// process group, and what is left once the agent has exited is killed.
func TestTeardownKillsWhatTheAgentLeftBehind(t *testing.T) {
	h := newHarness(t, "grandchild", nil)
	exec, events := cancelWhen(t, h, firstDelta)
	requireCleanCancel(t, h, exec, events)
	h.assertReaped(exec.ID)

	leftover := grandchildPID(t, h.agentSaw())
	// The leftover is not our child, so nothing here reaps it: it is gone once it no longer
	// exists or is a zombie waiting for its new parent. SIGKILL is immediate, but the kernel
	// finishes the kill asynchronously, so allow it a moment.
	deadline := time.Now().Add(10 * time.Second)
	for !processDead(leftover) {
		if time.Now().After(deadline) {
			t.Fatalf("the process the agent started (pid %d) survived the teardown", leftover)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func grandchildPID(t *testing.T, saw []string) int {
	t.Helper()
	for _, line := range saw {
		if rest, ok := strings.CutPrefix(line, "grandchild "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("bad grandchild line %q", line)
			}
			return pid
		}
	}
	t.Fatalf("the agent did not report starting a process: %v", saw)
	return 0
}

// processDead reports whether pid no longer runs: it does not exist, or it is a zombie.
func processDead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state is the first field after the parenthesised command name.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

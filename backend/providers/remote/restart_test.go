package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/remote"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Environment of the edge child process (see TestMain).
const (
	childDirEnv      = "REMOTE_EDGE_CHILD_DIR"
	childUpstreamEnv = "REMOTE_EDGE_CHILD_UPSTREAM"
	childAddrEnv     = "REMOTE_EDGE_CHILD_ADDR"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		runEdgeChild(dir, os.Getenv(childUpstreamEnv), os.Getenv(childAddrEnv))
		return
	}
	os.Exit(m.Run())
}

// runEdgeChild serves an edge in front of upstream on addr until it is killed.
func runEdgeChild(dir, upstream, addr string) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, what+":", err)
		os.Exit(2)
	}
	up, err := remote.New(remote.Config{UpstreamURL: upstream, UpstreamProvider: "mock", Retry: fastRetry}, logger)
	if err != nil {
		fail("remote", err)
	}
	if err := up.Start(context.Background()); err != nil {
		fail("start", err)
	}
	rt, err := local.Open(dir, backend.Options{Providers: up.Providers(), Logger: logger})
	if err != nil {
		fail("open", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listen", err)
	}
	fmt.Println("ready")
	fail("serve", http.Serve(l, proxy.New(rt, proxy.Options{RetryHint: 10 * time.Millisecond})))
}

// edgeProcess is one edge child.
type edgeProcess struct {
	cmd    *exec.Cmd
	stderr *testutil.LockedBuffer
}

func startEdgeProcess(t *testing.T, dir, upstream, addr string) *edgeProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childUpstreamEnv+"="+upstream, childAddrEnv+"="+addr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &edgeProcess{cmd: cmd, stderr: &testutil.LockedBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("edge child stderr:\n%s", p.stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("edge child did not start: %q %v", line, err)
	}
	return p
}

// kill is SIGKILL: no cleanup, no flush, nothing graceful.
func (p *edgeProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestEdgeRestartResumes kills the edge (SIGKILL) in the middle of a relayed execution and
// starts it again on the same store: the client's stream resumes and ends with the upstream's
// terminal event, and the stream, the edge's log and the upstream's log agree — nothing
// duplicated, nothing lost, one upstream execution.
func TestEdgeRestartResumes(t *testing.T) {
	u := startUpstream(t)
	dir, addr := t.TempDir(), freeAddr(t)
	input := strings.Repeat("word ", 30) + "end"
	child, client, ctx, exec := startThroughEdge(t, dir, addr, u.url, input, api.JSONObject{"delayMs": 60})
	var streamed []api.RuntimeEvent
	deltas, restarted := 0, false
	for ev, err := range client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		streamed = append(streamed, ev)
		if ev.Type == api.StandardEventTypeOutputTextDelta {
			deltas++
		}
		if deltas == 5 && !restarted {
			restarted = true
			child.kill(t)
			time.Sleep(300 * time.Millisecond) // the upstream goes on meanwhile
			child = startEdgeProcess(t, dir, u.url, addr)
		}
	}
	checkResumed(t, client, u, exec.ID, input, streamed)
}

// TestEdgeRestartWhileAwaitingApproval kills the edge while its execution waits for an
// approval: after the restart the action is still pending at the edge, the answer given there
// is forwarded upstream once, and the execution completes.
func TestEdgeRestartWhileAwaitingApproval(t *testing.T) {
	u := startUpstream(t)
	dir, addr := t.TempDir(), freeAddr(t)
	input := "approve after the restart"
	child, client, ctx, exec := startThroughEdge(t, dir, addr, u.url, input, api.JSONObject{"requireApproval": true})
	var streamed []api.RuntimeEvent
	for ev, err := range client.Events(ctx, exec.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		streamed = append(streamed, ev)
		if ev.Type == api.StandardEventTypeActionRequired {
			child.kill(t)
			child = startEdgeProcess(t, dir, u.url, addr)
			if _, err := client.RespondToAction(ctx, exec.ID, typed(ev.Data.AsActionRequest()).ID, api.ActionResponse{Approved: new(true)}); err != nil {
				t.Fatalf("answer after the restart: %v", err)
			}
		}
	}
	checkResumed(t, client, u, exec.ID, input, streamed)
	responded := 0
	for _, ev := range allEvents(t, upstreamClient(t, u), u.executionFor(t, input)) {
		if ev.Type == api.StandardEventTypeActionResponded {
			responded++
		}
	}
	if responded != 1 {
		t.Errorf("the upstream saw %d answers, want 1", responded)
	}
}

// startThroughEdge starts an edge child process on dir and addr in front of upstream, and through
// it one execution of the upstream's mock provider with input and config. The context bounds the
// test's calls and ends with it.
func startThroughEdge(t *testing.T, dir, addr, upstream, input string, config api.JSONObject) (*edgeProcess, *sdk.Client, context.Context, api.Execution) {
	t.Helper()
	child := startEdgeProcess(t, dir, upstream, addr)
	client, err := sdk.New("http://"+addr, sdk.WithRetry(fastRetry))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := client.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock",
		Input: input, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	return child, client, ctx, exec
}

func checkResumed(t *testing.T, client *sdk.Client, u *upstreamServer, id, input string, streamed []api.RuntimeEvent) {
	t.Helper()
	if len(streamed) == 0 || streamed[len(streamed)-1].Type != api.StandardEventTypeRunCompleted {
		t.Fatalf("the stream ended with %v, want run.completed", types(streamed))
	}
	local := allEvents(t, client, id)
	if len(local) != len(streamed) {
		t.Fatalf("streamed %d events, the edge logged %d", len(streamed), len(local))
	}
	for i, ev := range local {
		if ev.Sequence != int64(i+1) || streamed[i].ID != ev.ID || streamed[i].Type != ev.Type {
			t.Fatalf("event %d: streamed %s %s, logged %s %s", i, streamed[i].ID, streamed[i].Type, ev.ID, ev.Type)
		}
	}
	upstream := allEvents(t, upstreamClient(t, u), u.executionFor(t, input))
	sameRelay(t, local, upstream)
	if len(u.executions()) != 1 {
		t.Errorf("the upstream ran %d executions", len(u.executions()))
	}
}

// TestEdgeRestartWhileCancelling kills the edge while a cancellation waits for the upstream
// (its :cancel hangs): after the restart the execution is finished as cancelled, and the
// upstream execution is cancelled by the restarted edge.
func TestEdgeRestartWhileCancelling(t *testing.T) {
	u := startUpstream(t)
	fp, proxyURL := newFaultProxy(t, u.url)
	dir, addr := t.TempDir(), freeAddr(t)
	input := "cancelled across a restart"
	child, client, ctx, exec := startThroughEdge(t, dir, addr, proxyURL, input, api.JSONObject{"requireApproval": true})
	waitState(t, client, exec.ID, api.ExecutionStateAwaitingApproval)
	fp.set(func(p *faultProxy) { p.hangCancels = true })
	go func() { _, _ = client.CancelExecution(ctx, exec.ID, api.CancelExecutionRequest{}) }()
	waitState(t, client, exec.ID, api.ExecutionStateCancelling)
	child.kill(t)
	fp.set(func(p *faultProxy) { p.hangCancels = false })
	startEdgeProcess(t, dir, proxyURL, addr)

	final, err := client.WaitForTerminal(ctx, exec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.ExecutionStateCancelled {
		t.Fatalf("local state %s %+v", final.State, final.Error)
	}
	upCtx, upCancel := context.WithTimeout(ctx, 15*time.Second)
	defer upCancel()
	up, err := upstreamClient(t, u).WaitForTerminal(upCtx, u.executionFor(t, input))
	if err != nil {
		t.Fatalf("the upstream execution did not end: %v", err)
	}
	if up.State != api.ExecutionStateCancelled {
		t.Fatalf("upstream state %s, want cancelled", up.State)
	}
}

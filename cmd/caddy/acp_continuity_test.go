package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/acptest"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ACP conversations through the real binary (docs/acp.md "Conversations"): the remembering
// agent on the official TypeScript SDK (internal/acptest), configured by
// testdata/acp-remembering.caddy.

// acpAgentEnv is the environment of a server serving the remembering agent on sdk, offering mode
// (the agent's --continuity), with its sessions and the conversations' directories in dirs of
// the caller's (shared by the nodes of a cluster).
func acpAgentEnv(agent acptest.Agent, sdk acptest.SDK, mode, sessions, conversations, agentLog, idle string) []string {
	return []string{
		"ACP_NODE=" + agent.Node, "ACP_AGENT=" + agent.Script, "ACP_TS_SDK=" + sdk.Alias,
		"ACP_CONTINUITY=" + mode, "ACP_SESSIONS=" + sessions, "ACP_CONVERSATIONS=" + conversations,
		"ACP_AGENT_LOG=" + agentLog, "ACP_IDLE_TIMEOUT=" + idle,
	}
}

// On the binary and bbolt, for an agent on each SDK line (one resuming, one loading): the second
// turn recalls the first on the warm process; after the edge is SIGKILLed its agent goes with it
// (its stdin closes) and the restarted edge continues the stored session in a new process; after
// the warm process is evicted (a tiny idle_timeout) the next turn continues it again.
func TestBinaryACPConversationContinuity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	agent := acptest.Prepare(t)
	rows := []struct {
		sdk  acptest.SDK
		mode string // the agent's --continuity
		via  string // how a new process continues the session
	}{
		{agent.SDKs[0], "resume", "resume"},
		{agent.SDKs[len(agent.SDKs)-1], "load", "load"},
	}
	for _, row := range rows {
		t.Run(row.sdk.Version+"/"+row.mode, func(t *testing.T) {
			dir := t.TempDir()
			agentLog := filepath.Join(dir, "agent.log")
			base := instanceEnv(t)
			acpEnv := func(idle string) []string {
				return append(slices.Clone(base), acpAgentEnv(agent, row.sdk, row.mode, mkdir(t, dir, "sessions"),
					filepath.Join(dir, "conversations"), agentLog, idle)...)
			}
			srv := startCaddyWith(t, bin, acpEnv("1h"), "testdata/acp-continuity.Caddyfile")
			c := &client{t: t, base: srv.url}
			requireContinuity(t, c, api.SupportLevelNative)
			conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)

			c.requireRecall(conv, "apple", nil, "new")
			c.requireRecall(conv, "banana", []string{"apple"}, "warm")
			warm := agentPIDs(t, agentLog)
			if len(warm) != 2 { // the probe's and the conversation's
				t.Fatalf("agent processes started %v, want the probe's and one for the conversation", warm)
			}

			// SIGKILL: nothing of the edge's runs, but its agent ends with it (stdin closes).
			if err := srv.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-srv.exited
			awaitGone(t, warm[len(warm)-1])
			srv = startCaddyWith(t, bin, acpEnv("200ms"), "testdata/acp-continuity.Caddyfile")
			c = &client{t: t, base: srv.url}
			c.requireRecall(conv, "cherry", []string{"apple", "banana"}, row.via)

			// Evicted after the idle window: the next turn continues in a new process again.
			awaitGone(t, lastPID(t, agentLog))
			c.requireRecall(conv, "date", []string{"apple", "banana", "cherry"}, row.via)
			srv.stop(t)
			awaitGone(t, lastPID(t, agentLog))
		})
	}
}

// On two cluster nodes sharing PostgreSQL (and the agent's session store and the conversations'
// directories, as shared storage would): a turn on node b continues the session node a started,
// and a later turn on node a does not trust its warm process, which missed node b's turn: a new
// process continues the stored session.
func TestBinaryACPConversationContinuityAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	agent := acptest.Prepare(t)
	sdk := agent.SDKs[len(agent.SDKs)-1]
	dsn := clusterDatabase(t)
	dir := t.TempDir()
	sessions, conversations := mkdir(t, dir, "sessions"), filepath.Join(dir, "conversations")
	node := func(name string) (*server, *client, string) {
		agentLog := filepath.Join(dir, name+".log")
		env := append(instanceEnv(t), "HARNESS_DATABASE_URL="+dsn, "HARNESS_NODE="+name)
		env = append(env, acpAgentEnv(agent, sdk, "resume", sessions, conversations, agentLog, "1h")...)
		srv := startCaddyWith(t, bin, env, "testdata/acp-cluster.Caddyfile")
		return srv, &client{t: t, base: srv.url}, agentLog
	}
	srvA, a, logA := node("a")
	srvB, b, _ := node("b")

	conv := a.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	a.requireRecall(conv, "apple", nil, "new")
	b.requireRecall(conv, "banana", []string{"apple"}, "resume")
	stale := lastPID(t, logA)
	a.requireRecall(conv, "cherry", []string{"apple", "banana"}, "resume")
	awaitGone(t, stale)
	srvB.stop(t)
	srvA.stop(t)
}

// requireContinuity checks the provider's conversation.continuity in the runtime's description.
func requireContinuity(t *testing.T, c *client, want api.SupportLevel) {
	t.Helper()
	var runtime api.RuntimeDescription
	if err := json.Unmarshal(c.getRaw("/v1/runtime"), &runtime); err != nil {
		t.Fatal(err)
	}
	for _, p := range runtime.Providers {
		if p.ID == "remembering" {
			if got := p.Capabilities["conversation.continuity"]; got != want {
				t.Fatalf("conversation.continuity = %s, want %s", got, want)
			}
			return
		}
	}
	t.Fatalf("no provider remembering in %+v", runtime.Providers)
}

// requireRecall runs one turn of conv (requiring continuity) and checks that it succeeded with
// the agent recalling before, and got its native session via how (session.attached).
func (c *client) requireRecall(conv, input string, before []string, via string) {
	c.t.Helper()
	id := c.post("/v1/executions", map[string]any{
		"conversationId": conv, "providerId": "remembering", "input": input,
		"requiredCapabilities": []string{"conversation.continuity"},
	}, http.StatusAccepted)["id"].(string)
	exec := c.awaitEnd(id)
	recalled := "[]"
	if len(before) > 0 {
		recalled = `["` + strings.Join(before, `","`) + `"]`
	}
	want := fmt.Sprintf("I remember %s; now %q.", recalled, input)
	output := ""
	if exec.FinalOutput != nil {
		output = *exec.FinalOutput
	}
	if exec.State != api.ExecutionStateSucceeded || output != want {
		c.t.Fatalf("turn %q: %s, output %q, error %+v; want %q", input, exec.State, output, exec.Error, want)
	}
	var list api.EventList
	if err := json.Unmarshal(c.getRaw("/v1/executions/"+id+"/events"), &list); err != nil {
		c.t.Fatal(err)
	}
	var texts []string
	got := ""
	for _, e := range list.Events {
		switch e.Type {
		case api.StandardEventTypeOutputTextDelta:
			delta, _ := e.Data.AsTextDeltaData()
			texts = append(texts, delta.Text)
		case api.StandardEventTypeProviderEvent:
			data, _ := e.Data.AsProviderEventData()
			if data["method"] == "session.attached" {
				got, _ = data["params"].(map[string]any)["via"].(string)
			}
		}
	}
	if got != via || !slices.Equal(texts, []string{want}) {
		c.t.Fatalf("turn %q attached via %q with text %q, want via %s and only the answer", input, got, texts, via)
	}
}

// awaitEnd polls the execution until it is terminal.
func (c *client) awaitEnd(id string) api.Execution {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	for {
		var exec api.Execution
		if err := json.Unmarshal(c.getRaw("/v1/executions/"+id), &exec); err != nil {
			c.t.Fatal(err)
		}
		switch exec.State {
		case api.ExecutionStateSucceeded, api.ExecutionStateFailed, api.ExecutionStateCancelled:
			return exec
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("execution %s stayed %s", id, exec.State)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// agentPIDs are the pids of the agent processes that answered initialize, in order (the agent
// records "initialize pid N").
func agentPIDs(t *testing.T, agentLog string) []int {
	t.Helper()
	data, err := os.ReadFile(agentLog)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "initialize pid "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("agent log line %q", line)
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

func lastPID(t *testing.T, agentLog string) int {
	t.Helper()
	pids := agentPIDs(t, agentLog)
	if len(pids) == 0 {
		t.Fatal("no agent process answered initialize")
	}
	return pids[len(pids)-1]
}

// awaitGone waits until pid no longer runs (reaped, or a zombie of a dead parent's).
func awaitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a guard against a hang only
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/acptest"
)

// On two cluster nodes sharing PostgreSQL (and the conversations' directories, as shared
// storage would), each with a warm agent process of one conversation: DELETE on node a ends
// both processes — a's before its commit, b's when the erasure's marker reaches b — removes the
// conversation's working directory, and leaves no row of the database holding the turns' words,
// nor the conversation's id outside its tombstone and the stream log's marker (the ACP session
// key, provider_state, is gone with it).
func TestBinaryACPDeleteEndsTheWarmProcessesOnEveryNode(t *testing.T) {
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
	srvB, b, logB := node("b")

	conv := a.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	a.requireRecall(conv, "aubergine", nil, "new")
	b.requireRecall(conv, "blackberry", []string{"aubergine"}, "resume")
	warmA, warmB := lastPID(t, logA), lastPID(t, logB)
	if _, err := os.Stat(filepath.Join(conversations, conv)); err != nil {
		t.Fatalf("the conversation's working directory before the delete: %v", err)
	}

	a.request(http.MethodDelete, "/v1/conversations/"+conv, nil, http.StatusOK)
	awaitGone(t, warmA)
	awaitGone(t, warmB) // b hears of it through the stream log's marker
	if _, err := os.Stat(filepath.Join(conversations, conv)); !os.IsNotExist(err) {
		t.Fatalf("the conversation's working directory after the delete: %v, want it gone", err)
	}
	b.request(http.MethodGet, "/v1/conversations/"+conv, nil, http.StatusNotFound)

	// b's provider state deletion commits on its own goroutine after the marker: wait for it
	// (a hang guard, not a threshold).
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for _, row := range rowsHolding(t, dsn, "aubergine", "blackberry", conv) {
			kept := strings.HasSuffix(row, " hold "+conv) && // the id alone, where it must stay
				(strings.HasPrefix(row, "conversation_tombstones: 1 row") || strings.HasPrefix(row, "stream_log: 1 row"))
			if !kept {
				left = append(left, row)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database still holds the deleted conversation:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	srvB.stop(t)
	srvA.stop(t)
}

package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// chat's scripted side, in-process against the real proxy and runtime: lines piped in (not a
// terminal) are turns in order, each read once the previous reply has ended. The terminal side
// (lines during a turn, the busy policies, Ctrl-C) runs through a pseudo-terminal against the
// real binary (e2e_chat_linux_test.go).

// TestChatPipedLinesAreTurnsInOrder: each line is the next execution of one new conversation
// (busy policy enqueue by default), its reply printed; the end of input leaves with exit 0 and
// says how to continue.
func TestChatPipedLinesAreTurnsInOrder(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "hello there\n\nsecond one\n", 0, "chat")
	s.expect(t, exitOK)
	if got := s.stdout.String(); got != "Echo: hello there\nEcho: second one\n" {
		t.Errorf("stdout %q", got)
	}
	conv := chatConversation(t, base, s.stderr.String())
	if conv.BusyPolicy == nil || *conv.BusyPolicy != api.BusyPolicyEnqueue {
		t.Errorf("the new conversation's policy is %v, want enqueue", conv.BusyPolicy)
	}
	turns := history(t, base, conv.ID)
	if len(turns) != 2 || turns[0].Input != "hello there" || turns[1].Input != "second one" ||
		turns[0].State != api.ExecutionStateSucceeded || turns[1].State != api.ExecutionStateSucceeded {
		t.Errorf("turns %+v, want the two lines, succeeded, in order (the empty line sends nothing)", turns)
	}
	for _, want := range []string{"busy policy enqueue (the conversation's)", "left the chat; 'harnessctl chat " + conv.ID + "' continues it"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, s.stderr.String())
		}
	}
	if strings.Contains(s.stderr.String(), "> ") {
		t.Errorf("a prompt was shown though input is not a terminal:\n%s", s.stderr.String())
	}
}

// TestChatPipedAnswers: a question is answered by the next line, as run takes it; a turn that
// fails does not end the chat.
func TestChatPipedAnswers(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "deploy\nn\nagain\ny\n", 0, "chat", "--policy", "reject", "--config", `{"requireApproval":true}`)
	s.expect(t, exitOK)
	if got := s.stdout.String(); got != "Echo: again\n" {
		t.Errorf("stdout %q", got)
	}
	if !strings.Contains(s.stderr.String(), "failed: Mock execution was not approved") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
	conv := chatConversation(t, base, s.stderr.String())
	if conv.BusyPolicy == nil || *conv.BusyPolicy != api.BusyPolicyReject {
		t.Errorf("policy %v, want reject", conv.BusyPolicy)
	}
	turns := history(t, base, conv.ID)
	if len(turns) != 2 || turns[0].State != api.ExecutionStateFailed || turns[1].State != api.ExecutionStateSucceeded {
		t.Errorf("turns %+v", turns)
	}
}

// TestChatContinues: continuing shows the last --history turns (what was asked, what came of
// it), takes the last turn's provider, and follows a turn that has not ended (asking its
// question) before the next line is a turn.
func TestChatContinues(t *testing.T) {
	base := serveProviders(t, mock.New(), renamedProvider{mock.New(), "other"})
	c := sdkClient(t, base)
	ctx := context.Background()
	chat, err := c.NewConversation(ctx, api.BusyPolicyEnqueue, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := func(provider, input string, config api.JSONObject) api.Execution {
		t.Helper()
		exec, err := chat.Start(ctx, api.StartExecutionRequest{ProviderID: provider, Input: input, Config: config})
		if err != nil {
			t.Fatal(err)
		}
		return exec
	}
	start("mock", "oldest", nil)
	denied := start("mock", "deploy", api.JSONObject{"requireApproval": true})
	action := waitForAction(t, c, denied.ID)
	if _, err := c.RespondToAction(ctx, denied.ID, action, api.ActionResponse{Approved: new(false)}); err != nil {
		t.Fatal(err)
	}
	start("other", "newest", nil)
	// Not ended when chat begins, nor before the chat's first line answers it.
	slow := start("other", "slow", api.JSONObject{"requireApproval": true})
	waitForAction(t, c, slow.ID)

	s := ctl(t, base, "y\nand now\n", 0, "chat", "--history", "3", chat.ID)
	s.expect(t, exitOK)
	want := "> deploy\n(failed: PROVIDER_ERROR: Mock execution was not approved)\n> newest\nEcho: newest\n> slow\nEcho: slow\nEcho: and now\n"
	if got := s.stdout.String(); got != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
	for _, want := range []string{"earlier turns are not shown", slow.ID + " (awaiting_approval) has not ended: following it", "[y/N]"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, s.stderr.String())
		}
	}
	turns := history(t, base, chat.ID)
	last := turns[len(turns)-1]
	if len(turns) != 5 || last.Input != "and now" || last.ProviderID != "other" || last.State != api.ExecutionStateSucceeded {
		t.Errorf("the chat's turn %+v (of %d), want \"and now\" answered by the last turn's provider, other", last, len(turns))
	}
}

// TestChatRefusesBadInput: what cannot work is said before anything is sent.
func TestChatRefusesBadInput(t *testing.T) {
	base := serve(t)
	s := ctl(t, base, "", 0, "chat", "--policy", "sometimes")
	s.expect(t, exitUsage)
	if !strings.Contains(s.stderr.String(), `--policy "sometimes": want enqueue, reject, interrupt or parallel`) {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
	s = ctl(t, base, "", 0, "chat", "conv_a", "conv_b")
	s.expect(t, exitUsage)
	s = ctl(t, base, "", 0, "chat", "--history", "-1")
	s.expect(t, exitUsage)
	s = ctl(t, base, "hello\n", 0, "chat", "conv_00000000000000000000000000000000")
	s.expect(t, exitError)
	if !strings.Contains(s.stderr.String(), "not found") {
		t.Errorf("stderr:\n%s", s.stderr.String())
	}
	list, err := sdkClient(t, base).ListExecutions(context.Background(), nil)
	if err != nil || len(list.Executions) != 0 {
		t.Errorf("%d executions exist (%v), want none", len(list.Executions), err)
	}
}

// chatConversation reads the conversation chat named on stderr.
func chatConversation(t *testing.T, base, stderr string) api.Conversation {
	t.Helper()
	_, rest, ok := strings.Cut(stderr, "conversation ")
	id, _, _ := strings.Cut(rest, ",")
	if !ok || !strings.HasPrefix(id, "conv_") {
		t.Fatalf("no conversation on stderr:\n%s", stderr)
	}
	conv, err := sdkClient(t, base).GetConversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// history is the conversation's executions, oldest first.
func history(t *testing.T, base, conversationID string) []api.Execution {
	t.Helper()
	turns, err := sdkClient(t, base).Conversation(api.Conversation{ID: conversationID}).History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

// serveProviders is serve with these providers.
func serveProviders(t *testing.T, providers ...backend.Provider) string {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: providers})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown()
		hs.Close()
		_ = rt.Close()
	})
	return hs.URL
}

// renamedProvider is a provider under another id.
type renamedProvider struct {
	backend.Provider
	id string
}

func (p renamedProvider) Manifest() api.ProviderManifest {
	m := p.Provider.Manifest()
	m.ID = p.id
	return m
}

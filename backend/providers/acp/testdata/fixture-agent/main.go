// Command fixture-agent is a scripted ACP agent for the acp provider's tests, written on the
// agent side of github.com/coder/acp-go-sdk. The scenario comes from ACP_FIXTURE_SCENARIO (the
// provider passes only its configured environment, so tests set it there); what the agent saw
// is appended, one line per fact, to the file named by ACP_FIXTURE_LOG.
//
// Every scenario writes a secret-looking line to stderr first: the provider must never let it
// reach an event or an error.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

const (
	sessionID        = "fixture-session"
	secretDiagnostic = "FIXTURE-SECRET-DIAGNOSTIC token=hunter2"
)

func main() {
	scenario := os.Getenv("ACP_FIXTURE_SCENARIO")
	if scenario == "leftover" {
		// The process a "grandchild" agent leaves behind: it ignores SIGTERM and never exits by
		// itself, like a helper an agent forgot to stop.
		signal.Ignore(syscall.SIGTERM)
		blockForever()
	}
	fmt.Fprintln(os.Stderr, secretDiagnostic)
	if scenario == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	out := &lockedWriter{w: os.Stdout}
	agent := &fixture{scenario: scenario, out: out}
	conn := acp.NewAgentSideConnection(agent, out, tapInbound(os.Stdin))
	conn.SetLogger(slog.New(slog.DiscardHandler))
	agent.conn = conn
	<-conn.Done()
	record("stdin-closed")
	if scenario == "stubborn" {
		blockForever() // ignores the end of stdin and SIGTERM: only SIGKILL ends it
	}
}

// blockForever sleeps rather than using an empty select: when every goroutine is blocked on
// channels the Go runtime declares a deadlock and exits, which would make the agent less stubborn
// than the test needs.
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// lockedWriter serializes the SDK's lines and the raw lines some scenarios write by hand.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer

	// Set by holdUntil: lines are kept back until one containing holdUntil is written, and then
	// go out together in a single write.
	holdUntil string
	held      []byte
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holdUntil != "" {
		l.held = append(l.held, b...)
		if !strings.Contains(string(b), l.holdUntil) {
			return len(b), nil
		}
		out := l.held
		l.holdUntil, l.held = "", nil
		if _, err := l.w.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return l.w.Write(b)
}

// hold keeps every line back until one containing marker is written, then writes them all at
// once: the client reads them from one write, as fast as it can.
func (l *lockedWriter) hold(marker string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdUntil = marker
}

func (l *lockedWriter) raw(line string) { _, _ = l.Write([]byte(line + "\n")) }

// tapInbound records every line the client sends ("wire <line>") before the SDK sees it, so
// tests can check the order of messages on the wire rather than the order in which the SDK's
// goroutines happened to handle them.
func tapInbound(r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		scanner := bufio.NewScanner(r)
		scanner.Buffer(make([]byte, 0, 64*1024), 10*1024*1024)
		for scanner.Scan() {
			record("wire %s", scanner.Text())
			if _, err := pw.Write(append(scanner.Bytes(), '\n')); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr
}

func record(format string, args ...any) {
	path := os.Getenv("ACP_FIXTURE_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

type fixture struct {
	scenario string
	out      *lockedWriter
	conn     *acp.AgentSideConnection

	mu   sync.Mutex
	seen map[string]any // what the client sent, for the "inspect" scenario
}

func (f *fixture) note(key string, value any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[string]any{}
	}
	f.seen[key] = value
}

func (f *fixture) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	record("initialize protocolVersion=%d pid=%d", p.ProtocolVersion, os.Getpid())
	if tp := os.Getenv("TRACEPARENT"); tp != "" {
		record("traceparent %s", tp) // the provider's trace context (tracing tests)
	}
	f.note("protocolVersion", p.ProtocolVersion)
	f.note("readTextFile", p.ClientCapabilities.Fs.ReadTextFile)
	f.note("writeTextFile", p.ClientCapabilities.Fs.WriteTextFile)
	f.note("terminal", p.ClientCapabilities.Terminal)
	switch f.scenario {
	case "wrong-version":
		return acp.InitializeResponse{ProtocolVersion: 2}, nil
	case "silent-init":
		<-ctx.Done() // never answers; the provider's initialization timeout must end it
		return acp.InitializeResponse{}, ctx.Err()
	}
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}

func (f *fixture) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	record("session/new cwd=%s mcpServers=%d", p.Cwd, len(p.McpServers))
	f.note("cwd", p.Cwd)
	f.note("mcpServers", p.McpServers)
	return acp.NewSessionResponse{SessionId: sessionID}, nil
}

func (f *fixture) Cancel(ctx context.Context, p acp.CancelNotification) error {
	record("session/cancel session=%s", p.SessionId)
	return nil
}

func (f *fixture) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	record("session/prompt")
	f.note("prompt", p.Prompt)
	endTurn := acp.PromptResponse{StopReason: acp.StopReasonEndTurn}
	if reason := os.Getenv("ACP_FIXTURE_STOP_REASON"); reason != "" {
		endTurn.StopReason = acp.StopReason(reason)
	}
	switch f.scenario {
	case "stream":
		f.stream(ctx, "", "ACP ", "fixture")
		return endTurn, nil
	case "permission":
		outcome := f.askPermission(ctx, "call-1", "Edit fixture.txt", fixtureOptions())
		if outcome == "cancelled" {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		f.stream(ctx, "selected:"+outcome)
		return endTurn, nil
	case "updates-then-permission":
		// ACP_FIXTURE_UPDATES session/updates (default 2: a text chunk and the tool call), then the
		// permission request, all in one write.
		updates := 2
		if n, err := strconv.Atoi(os.Getenv("ACP_FIXTURE_UPDATES")); err == nil && n >= 1 {
			updates = n
		}
		f.out.hold(acp.ClientMethodSessionRequestPermission)
		for i := 1; i < updates; i++ {
			f.stream(ctx, fmt.Sprintf("u%d ", i))
		}
		outcome := f.askPermission(ctx, "call-1", "Edit fixture.txt", fixtureOptions())
		if outcome == "cancelled" {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		f.stream(ctx, "selected:"+outcome)
		return endTurn, nil
	case "two-permissions", "permission-flood":
		return f.concurrentPermissions(ctx, endTurn)
	case "grandchild":
		// Starts a process of its own that outlives it, then hangs until its stdin closes.
		leftover := exec.Command(os.Args[0])
		leftover.Env = append(os.Environ(), "ACP_FIXTURE_SCENARIO=leftover")
		if err := leftover.Start(); err != nil {
			return acp.PromptResponse{}, err
		}
		record("grandchild %d", leftover.Process.Pid)
		f.stream(ctx, "working")
		blockForever()
	case "hang", "stubborn":
		f.stream(ctx, "working")
		blockForever() // ignores session/cancel; the process ends by teardown
	case "cooperative":
		f.stream(ctx, "working")
		<-ctx.Done() // session/cancel cancels the prompt's context in the SDK
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case "crash":
		f.stream(ctx, "about to crash")
		fmt.Fprintln(os.Stderr, "panic: "+secretDiagnostic)
		os.Exit(3)
	case "foreign-session":
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: "someone-else", Update: acp.UpdateAgentMessageText("x")})
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "oversized":
		size, _ := strconv.Atoi(os.Getenv("ACP_FIXTURE_BYTES"))
		f.stream(ctx, strings.Repeat("x", size))
		return endTurn, nil
	case "malformed-json":
		f.out.raw(`{"jsonrpc":"2.0","method":"session/update",`) // a JSON syntax error: tolerated
		f.stream(ctx, "", "ACP ", "fixture")
		return endTurn, nil
	case "bad-envelope":
		f.out.raw(`{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"` + sessionID + `"}}`)
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "bad-params":
		f.out.raw(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sessionID +
			`","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}}}`)
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "bad-permission-params":
		f.out.raw(`{"jsonrpc":"2.0","id":"bad-1","method":"session/request_permission","params":{"sessionId":"` +
			sessionID + `","toolCall":{"toolCallId":"call-1"}}}`)
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "unknown-notification":
		f.out.raw(`{"jsonrpc":"2.0","method":"session/unheard_of","params":{}}`)
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "extension-notification":
		f.out.raw(`{"jsonrpc":"2.0","method":"_fixture/hello","params":{}}`) // must be ignored
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "update-as-request":
		// session/update is a notification; sent with an id it is a request the client does
		// not offer.
		f.out.raw(`{"jsonrpc":"2.0","id":"as-request","method":"session/update","params":{"sessionId":"` + sessionID +
			`","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"sent as a request"}}}}`)
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "unmatched-response":
		f.out.raw(`{"jsonrpc":"2.0","id":4242,"result":{}}`)
		f.stream(ctx, "ACP fixture")
		return endTurn, nil
	case "fs-terminal":
		_, fsErr := f.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sessionID, Path: "/etc/hostname"})
		_, termErr := f.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: sessionID, Command: "true"})
		f.stream(ctx, fmt.Sprintf("fs:%d terminal:%d", errorCode(fsErr), errorCode(termErr)))
		return endTurn, nil
	case "env":
		env := os.Environ()
		slices.Sort(env)
		f.stream(ctx, strings.Join(env, "\n"))
		return endTurn, nil
	case "inspect":
		wd, _ := os.Getwd()
		f.note("wd", wd)
		f.mu.Lock()
		seen, _ := json.Marshal(f.seen)
		f.mu.Unlock()
		f.stream(ctx, string(seen))
		return endTurn, nil
	}
	return acp.PromptResponse{}, fmt.Errorf("unknown fixture scenario %q", f.scenario)
}

func (f *fixture) stream(ctx context.Context, chunks ...string) {
	for _, chunk := range chunks {
		_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sessionID, Update: acp.UpdateAgentMessageText(chunk)})
	}
}

// fixtureOptions are the four ACP option kinds, or the list in ACP_FIXTURE_OPTIONS
// ("id:kind,id:kind") for the edge cases of the option-selection rules.
func fixtureOptions() []acp.PermissionOption {
	spec := os.Getenv("ACP_FIXTURE_OPTIONS")
	if spec == "" {
		spec = "allow-once:allow_once,allow-always:allow_always,reject-once:reject_once,reject-always:reject_always"
	}
	var options []acp.PermissionOption
	for _, item := range strings.Split(spec, ",") {
		id, kind, _ := strings.Cut(item, ":")
		options = append(options, acp.PermissionOption{
			OptionId: acp.PermissionOptionId(id),
			Name:     "Option " + id,
			Kind:     acp.PermissionOptionKind(kind),
		})
	}
	return options
}

// askPermission announces a tool call, asks about it and returns the selected option id or
// "cancelled".
func (f *fixture) askPermission(ctx context.Context, toolCallID, title string, options []acp.PermissionOption) string {
	_ = f.conn.SessionUpdate(ctx, acp.SessionNotification{
		SessionId: sessionID,
		Update:    acp.StartToolCall(acp.ToolCallId(toolCallID), title, acp.WithStartKind(acp.ToolKindEdit), acp.WithStartStatus(acp.ToolCallStatusPending)),
	})
	response, err := f.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: sessionID,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(toolCallID), Title: acp.Ptr(title)},
		Options:   options,
	})
	outcome := "cancelled"
	switch {
	case err != nil:
		outcome = "error"
	case response.Outcome.Selected != nil:
		outcome = string(response.Outcome.Selected.OptionId)
	}
	record("permission %s outcome=%s", toolCallID, outcome)
	return outcome
}

// concurrentPermissions asks ACP_FIXTURE_PERMISSIONS (default 2) questions at once and reports
// every outcome, ordered by tool call id.
func (f *fixture) concurrentPermissions(ctx context.Context, endTurn acp.PromptResponse) (acp.PromptResponse, error) {
	count := 2
	if n, err := strconv.Atoi(os.Getenv("ACP_FIXTURE_PERMISSIONS")); err == nil {
		count = n
	}
	outcomes := make([]string, count)
	var wg sync.WaitGroup
	for i := range count {
		wg.Go(func() {
			id := fmt.Sprintf("call-%d", i+1)
			outcomes[i] = id + "=" + f.askPermission(ctx, id, "Step "+id, fixtureOptions())
		})
	}
	wg.Wait()
	f.stream(ctx, strings.Join(outcomes, " "))
	return endTurn, nil
}

func errorCode(err error) int {
	if re, ok := err.(*acp.RequestError); ok {
		return re.Code
	}
	return 0
}

func (f *fixture) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (f *fixture) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (f *fixture) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (f *fixture) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (f *fixture) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (f *fixture) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

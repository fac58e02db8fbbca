package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

var runCommand = command{
	name:    "run",
	args:    "INPUT...",
	summary: "start an execution, print its text as it arrives, answer its requests at the terminal",
	help: `The words of INPUT are joined by spaces into the execution's input. A conversation is
created unless --conversation names one.

When the execution asks for approval, harnessctl asks you: y (or yes) approves, anything
else denies. When it asks for input, the line you type is the answer. End of input
(Ctrl-D) cancels the execution.

Ctrl-C cancels the execution and waits until it is cancelled; a second Ctrl-C stops waiting.

Text goes to stdout, questions and notices to stderr. With --json, the text is not printed;
the final execution is, as JSON, once it has ended.

The exit code says how the execution ended: 0 succeeded, 3 failed, 4 cancelled
(1 when harnessctl could not run it at all).

Examples:
  harnessctl run "hello runtime"
  harnessctl run --provider mock --config '{"requireApproval":true}' "deploy the site"
  harnessctl run --config '{"requestInput":true}' --require action.input "greet"
  harnessctl run --json "hello" | jq .finalOutput`,
	run: (*app).run,
}

// cancelReason is what a Ctrl-C records in run.cancelled.
const cancelReason = "interrupted at the terminal (harnessctl)"

func (a *app) run(g *globals, cmd command, args []string) int {
	// The Ctrl-C watcher reports on stderr while the event loop does.
	locked := *a
	locked.stderr = &lockedWriter{w: a.stderr}
	a = &locked

	fs := g.flagSet(a, "run")
	provider := fs.String("provider", "mock", "provider `id`")
	conversation := fs.String("conversation", "", "run in this conversation `id` (default: a new one)")
	config := fs.String("config", "", "provider config as a JSON `object`")
	key := fs.String("key", "", "idempotency `key`: repeating the command with the same key does not start a second execution")
	var require stringList
	fs.Var(&require, "require", "required `capability` (repeatable), e.g. action.approval")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return a.usageError("run: INPUT is missing")
	}
	cfg, err := parseObject("config", *config)
	if err != nil {
		return a.usageError("run: %v", err)
	}
	c, err := a.client(g)
	if err != nil {
		return a.fail(err)
	}

	// Take Ctrl-C before anything can start: from here on it cancels instead of killing.
	interrupts, stopInterrupts := a.interrupts()
	defer stopInterrupts()
	ctx := context.Background()

	if *conversation == "" {
		conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{Metadata: &api.JsonObject{"client": "harnessctl"}})
		if err != nil {
			return a.fail(err)
		}
		*conversation = conv.Id
	}
	req := api.StartExecutionRequest{ConversationId: *conversation, ProviderId: *provider, Input: strings.Join(fs.Args(), " "), Config: cfg}
	if len(require) > 0 {
		req.RequiredCapabilities = new([]string(require))
	}
	if *key != "" {
		req.IdempotencyKey = key
	}
	exec, err := c.StartExecution(ctx, req)
	if err != nil {
		return a.fail(err)
	}
	fmt.Fprintf(a.stderr, "harnessctl: execution %s started; Ctrl-C cancels it\n", exec.Id)

	r := &runner{app: a, g: g, client: c, id: exec.Id, interrupted: make(chan struct{})}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	done := make(chan struct{})
	defer close(done)
	go r.watchInterrupts(waitCtx, interrupts, stopWaiting, done)

	for event, err := range c.Events(waitCtx, exec.Id, 0) {
		if err != nil {
			r.endLine()
			if waitCtx.Err() != nil {
				fmt.Fprintf(a.stderr, "harnessctl: stopped waiting; execution %s may still be cancelling\n", exec.Id)
				return exitCancelled
			}
			return a.fail(err)
		}
		r.handle(waitCtx, event)
	}
	r.endLine()
	final, err := c.GetExecution(ctx, exec.Id)
	if err != nil {
		return a.fail(err)
	}
	if g.json {
		printJSON(a.stdout, final)
	}
	switch final.State {
	case api.ExecutionStateSucceeded:
		return exitOK
	case api.ExecutionStateFailed:
		msg := ""
		if final.Error != nil {
			msg = ": " + final.Error.Message
		}
		fmt.Fprintf(a.stderr, "harnessctl: execution %s failed%s\n", exec.Id, msg)
		return exitFailed
	case api.ExecutionStateCancelled:
		fmt.Fprintf(a.stderr, "harnessctl: execution %s cancelled\n", exec.Id)
		return exitCancelled
	}
	return a.fail(fmt.Errorf("execution %s is %s after its terminal event", exec.Id, final.State))
}

// runner is one `harnessctl run` following its execution.
type runner struct {
	*app
	g      *globals
	client *sdk.Client
	id     string

	// interrupted is closed when the execution is being cancelled (Ctrl-C or end of input); a
	// pending prompt stops waiting for an answer then.
	interrupted   chan struct{}
	interruptOnce sync.Once

	lines     chan string // the terminal's lines, read by one goroutine once a prompt needs them
	linesOnce sync.Once

	midLine bool // the last text printed did not end with a newline
}

// watchInterrupts cancels the execution at the first Ctrl-C and stops waiting at the second.
func (r *runner) watchInterrupts(ctx context.Context, interrupts <-chan os.Signal, stopWaiting func(), done <-chan struct{}) {
	select {
	case <-interrupts:
	case <-done:
		return
	}
	r.cancel(ctx)
	select {
	case <-interrupts:
		stopWaiting()
	case <-done:
	}
}

// cancel asks the server to cancel the execution, once; the event stream then brings
// run.cancelled.
func (r *runner) cancel(ctx context.Context) {
	r.interruptOnce.Do(func() {
		close(r.interrupted)
		fmt.Fprintf(r.stderr, "\nharnessctl: cancelling execution %s (Ctrl-C again to stop waiting)\n", r.id)
		go func() {
			if _, err := r.client.CancelExecution(ctx, r.id, api.CancelExecutionRequest{Reason: new(cancelReason)}); err != nil && ctx.Err() == nil {
				fmt.Fprintf(r.stderr, "harnessctl: cancel: %v\n", err)
			}
		}()
	})
}

// handle prints text and answers requests.
func (r *runner) handle(ctx context.Context, event api.RuntimeEvent) {
	switch event.Type {
	case api.StandardEventTypeOutputTextDelta:
		text, _ := event.Data["text"].(string)
		if !r.g.json && text != "" {
			fmt.Fprint(r.stdout, text)
			r.midLine = !strings.HasSuffix(text, "\n")
		}
	case api.StandardEventTypeActionRequired:
		r.answer(ctx, event)
	}
}

// answer asks at the terminal and sends the answer.
func (r *runner) answer(ctx context.Context, event api.RuntimeEvent) {
	var action api.ActionRequest
	raw, _ := json.Marshal(event.Data)
	if err := json.Unmarshal(raw, &action); err != nil || action.Id == "" {
		fmt.Fprintf(r.stderr, "harnessctl: unreadable action request in event %s\n", event.Id)
		return
	}
	r.endLine()
	var response api.ActionResponse
	switch action.Kind {
	case api.ActionKindApproval:
		question := action.Title
		if action.Description != nil && *action.Description != "" {
			question += " — " + *action.Description
		}
		line, ok := r.ask(ctx, "? "+question+" [y/N] ")
		if !ok {
			return
		}
		approved := strings.EqualFold(line, "y") || strings.EqualFold(line, "yes")
		response.Approved = &approved
	default:
		line, ok := r.ask(ctx, "? "+action.Title+": ")
		if !ok {
			return
		}
		response.Value = new(api.JsonValue(line))
	}
	_, err := r.client.RespondToAction(ctx, r.id, action.Id, response)
	if errors.Is(err, sdk.ErrActionNotFound) || errors.Is(err, sdk.ErrActionAlreadyResolved) {
		return // cancelled or answered meanwhile; the events say what happened
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(r.stderr, "harnessctl: answering %s: %v\n", action.Id, err)
	}
}

// ask prompts on stderr and waits for a line. ok is false when the execution is being cancelled
// instead, or input ended (which cancels it).
func (r *runner) ask(ctx context.Context, prompt string) (string, bool) {
	fmt.Fprint(r.stderr, prompt)
	r.linesOnce.Do(func() {
		r.lines = make(chan string)
		go func() {
			defer close(r.lines)
			sc := bufio.NewScanner(r.stdin)
			for sc.Scan() {
				r.lines <- strings.TrimSpace(sc.Text())
			}
		}()
	})
	select {
	case line, open := <-r.lines:
		if !open {
			fmt.Fprintln(r.stderr)
			r.cancel(ctx)
			return "", false
		}
		return line, true
	case <-r.interrupted:
		return "", false
	case <-ctx.Done():
		return "", false
	}
}

// lockedWriter serializes writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// endLine ends a line of streamed text before anything else is printed.
func (r *runner) endLine() {
	if r.midLine {
		fmt.Fprintln(r.stdout)
		r.midLine = false
	}
}

package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// t0 is the clean scenario's start; at(s) is s seconds after it.
var t0 = time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// builder writes a history through the real Writer and remembers which line
// each label is, so a test can doctor a named line.
type builder struct {
	t      *testing.T
	buf    bytes.Buffer
	w      *history.Writer
	n      int
	labels map[string]int
}

func newBuilder(t *testing.T) *builder {
	b := &builder{t: t, labels: map[string]int{}}
	b.w = history.NewWriter(&b.buf)
	return b
}

func (b *builder) put(label string, err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
	b.n++
	if label != "" {
		b.labels[label] = b.n
	}
}

func (b *builder) request(label, op, node string, from, to float64, status int, path string, body, answer string) {
	r := history.Request{Client: "c1", Node: node, Op: op, Method: "POST", Path: path, Tenant: "a",
		Invoke: at(from), Complete: at(to), Status: status}
	if body != "" {
		r.Body = json.RawMessage(body)
	}
	if answer != "" {
		r.Answer = json.RawMessage(answer)
	}
	if status == 0 {
		r.Error = "timeout"
	}
	b.put(label, b.w.Request(r))
}

// exec is an Execution answer.
func exec(id, conv, state, input string, updated float64, extra string) string {
	return fmt.Sprintf(`{"id":%q,"conversationId":%q,"providerId":"mock","state":%q,"input":%q,"updatedAt":%q%s}`,
		id, conv, state, input, at(updated).Format(time.RFC3339Nano), extra)
}

type stream struct{ kind, sub, resumedFrom, scope, node, after string }

func (b *builder) event(label string, s stream, execID string, seq int64, typ string, when float64, data string) {
	if data == "" {
		data = "{}"
	}
	whole := fmt.Sprintf(`{"id":"%s:%d","executionId":%q,"sequence":%d,"type":%q,"time":%q,"data":%s}`,
		execID, seq, execID, seq, typ, at(when).Format(time.RFC3339Nano), data)
	e := history.Event{Stream: s.kind, Subscription: s.sub, ResumedFrom: s.resumedFrom, Scope: s.scope, Node: s.node,
		After: s.after, Cursor: fmt.Sprint(seq), ExecutionID: execID, Sequence: seq, Type: typ, Data: json.RawMessage(whole)}
	e.T = at(when + 0.01)
	b.put(label, b.w.Event(e))
}

func (b *builder) lines() []string {
	b.t.Helper()
	if err := b.w.Flush(); err != nil {
		b.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.buf.String(), "\n"), "\n")
}

// scenario is a clean history: two executions of one enqueue conversation
// on two nodes, an approval answered by a person, a resumed stream, a start
// refused 429, a kill, final reads on both nodes and the usage total.
type scenario struct {
	entries []entry
}

// entry is one line of the scenario and its label ("" for none).
type entry struct {
	label, text string
}

const (
	usage30    = `{"provider":"harness","type":"usage","usage":{"totalTokens":30,"cost":{"amount":"0.003","currency":"USD"}}}`
	snapUsage  = `,"usage":{"totalTokens":30,"cost":{"amount":"0.003","currency":"USD"}}`
	responded1 = `{"actionId":"act_1","approved":true,"decision":"approve","actor":{"kind":"user"}}`
)

func cleanScenario(t *testing.T) *scenario {
	b := newBuilder(t)
	b.put("run", b.w.Run(history.Run{Header: history.Header{T: at(0)}, Seed: 7, Store: "postgres", Nodes: []string{"n1", "n2"},
		Lease: history.Duration(2 * time.Second), Command: "harness-nemesis -seed 7",
		Settings: history.Settings{CancelBound: history.Duration(4 * time.Second), RespondBound: history.Duration(4 * time.Second),
			MaxRunning: 3, Tenants: []string{"a"}, Budgets: []history.Budget{{Tenant: "a", Tokens: 1000, Slack: 100}}}}))
	b.request("conv1", "createConversation", "n1", 0.1, 0.15, 201, "/v1/conversations", `{"busyPolicy":"enqueue"}`, `{"id":"conv_1","busyPolicy":"enqueue"}`)
	b.request("start1", "start", "n1", 0.2, 0.3, 202, "/v1/executions", `{"conversationId":"conv_1","providerId":"mock","input":"one","idempotencyKey":"k1"}`, exec("exec_1", "conv_1", "queued", "one", 0.25, ""))
	x1 := stream{"execution", "s1", "", "exec_1", "n1", ""}
	x1r := stream{"execution", "s2", "s1", "exec_1", "n2", "3"}
	c1 := stream{"conversation", "c1", "", "conv_1", "n2", ""}
	x2 := stream{"execution", "s3", "", "exec_2", "n1", ""}
	tn := stream{"tenant", "t1", "", "a", "n1", ""}
	b.event("x1.1", x1, "exec_1", 1, "run.queued", 0.31, "")
	b.event("c1.1.1", c1, "exec_1", 1, "run.queued", 0.31, "")
	b.request("start1b", "start", "n2", 0.3, 0.5, 202, "/v1/executions", `{"conversationId":"conv_1","providerId":"mock","input":"one","idempotencyKey":"k1"}`, exec("exec_1", "conv_1", "running", "one", 0.35, ""))
	b.event("x1.2", x1, "exec_1", 2, "run.started", 0.36, "")
	b.event("c1.1.2", c1, "exec_1", 2, "run.started", 0.36, "")
	b.event("x1.3", x1, "exec_1", 3, "action.required", 0.6, `{"id":"act_1","executionId":"exec_1","kind":"approval","title":"go?","payload":{}}`)
	b.event("c1.1.3", c1, "exec_1", 3, "action.required", 0.6, `{"id":"act_1","executionId":"exec_1","kind":"approval","title":"go?","payload":{}}`)
	b.request("get1", "get", "n1", 0.7, 0.8, 200, "/v1/executions/exec_1", "", exec("exec_1", "conv_1", "awaiting_approval", "one", 0.6, ""))
	b.request("start2", "start", "n2", 1.0, 1.1, 202, "/v1/executions", `{"conversationId":"conv_1","providerId":"mock","input":"two","idempotencyKey":"k2"}`, exec("exec_2", "conv_1", "queued", "two", 1.05, `,"waitingFor":["exec_1"]`))
	b.event("x2.1", x2, "exec_2", 1, "run.queued", 1.05, "")
	b.event("c1.2.1", c1, "exec_2", 1, "run.queued", 1.05, "")
	b.request("get1b", "get", "n2", 1.15, 1.2, 200, "/v1/executions/exec_1", "", exec("exec_1", "conv_1", "awaiting_approval", "one", 0.6, ""))
	b.request("respond1", "respond", "n1", 1.2, 1.3, 200, "/v1/executions/exec_1/actions/act_1:respond", `{"approved":true}`, exec("exec_1", "conv_1", "running", "one", 1.25, ""))
	b.event("x1.4", x1r, "exec_1", 4, "action.responded", 1.3, responded1)
	b.event("c1.1.4", c1, "exec_1", 4, "action.responded", 1.3, responded1)
	b.event("x1.5", x1r, "exec_1", 5, "provider.event", 1.5, usage30)
	b.event("c1.1.5", c1, "exec_1", 5, "provider.event", 1.5, usage30)
	b.event("x1.6", x1r, "exec_1", 6, "output.text.done", 1.7, `{"text":"done"}`)
	b.event("c1.1.6", c1, "exec_1", 6, "output.text.done", 1.7, `{"text":"done"}`)
	b.request("get2", "get", "n2", 1.8, 1.9, 200, "/v1/executions/exec_1", "", exec("exec_1", "conv_1", "running", "one", 1.25, ""))
	b.request("refused3", "start", "n1", 2.0, 2.1, 429, "/v1/executions", `{"conversationId":"conv_1","providerId":"mock","input":"three","idempotencyKey":"k3"}`, `{"code":"RATE_LIMITED","message":"max_running"}`)
	b.put("kill", b.w.Fault(history.Fault{Header: history.Header{T: at(2.5)}, Fault: "kill", Target: "n2", Phase: history.PhaseStart}))
	b.put("killEnd", b.w.Fault(history.Fault{Header: history.Header{T: at(3.0)}, Fault: "kill", Target: "n2", Phase: history.PhaseEnd}))
	b.event("x1.7", x1r, "exec_1", 7, "run.completed", 6.0, `{"finalOutput":"done"}`)
	b.event("c1.1.7", c1, "exec_1", 7, "run.completed", 6.0, `{"finalOutput":"done"}`)
	b.event("x2.2", x2, "exec_2", 2, "run.started", 6.1, "")
	b.event("c1.2.2", c1, "exec_2", 2, "run.started", 6.1, "")
	b.event("t.2.2", tn, "exec_2", 2, "run.started", 6.1, "")
	b.request("get3", "get", "n1", 6.2, 6.3, 200, "/v1/executions/exec_1", "", exec("exec_1", "conv_1", "succeeded", "one", 6.0, snapUsage))
	b.request("cancel2", "cancel", "n1", 6.5, 6.8, 200, "/v1/executions/exec_2:cancel", "", exec("exec_2", "conv_1", "cancelled", "two", 6.7, ""))
	b.event("x2.3", x2, "exec_2", 3, "run.cancelled", 6.7, "")
	b.event("c1.2.3", c1, "exec_2", 3, "run.cancelled", 6.7, "")
	b.event("t.2.3", tn, "exec_2", 3, "run.cancelled", 6.7, "")
	for i, node := range []string{"n1", "n2"} {
		when := 20.0 + float64(i)
		b.put("final1."+node, b.w.Final(history.Final{Header: history.Header{T: at(when)}, Node: node, ExecutionID: "exec_1", Status: 200, State: "succeeded", Tenant: "a",
			Snapshot: json.RawMessage(exec("exec_1", "conv_1", "succeeded", "one", 6.0, snapUsage))}))
		b.put("final2."+node, b.w.Final(history.Final{Header: history.Header{T: at(when + 0.5)}, Node: node, ExecutionID: "exec_2", Status: 200, State: "cancelled", Tenant: "a",
			Snapshot: json.RawMessage(exec("exec_2", "conv_1", "cancelled", "two", 6.7, ""))}))
	}
	b.put("usage", b.w.Request(history.Request{Client: "final", Node: "n1", Op: "usage", Method: "GET", Path: "/v1/usage", Tenant: "a", Final: true,
		Invoke: at(22), Complete: at(22.1), Status: 200,
		Answer: json.RawMessage(`{"from":"2026-12-03T00:00:00Z","to":"2026-12-04T00:00:00Z","total":{"executions":1,"inputTokens":0,"outputTokens":0,"cachedReadTokens":0,"cachedWriteTokens":0,"thoughtTokens":0,"totalTokens":30,"costs":[{"amount":"0.003","currency":"USD"}]},"groups":[]}`)}))
	byNo := map[int]string{}
	for l, n := range b.labels {
		byNo[n] = l
	}
	sc := &scenario{}
	for i, text := range b.lines() {
		sc.entries = append(sc.entries, entry{byNo[i+1], text})
	}
	return sc
}

// line returns the 1-based number of a label.
func (s *scenario) line(t *testing.T, label string) int {
	t.Helper()
	for i, e := range s.entries {
		if e.label == label {
			return i + 1
		}
	}
	t.Fatalf("no line labelled %q", label)
	return 0
}

// check reads the (doctored) lines through the real Reader and checks them.
func (s *scenario) check(t *testing.T) *Report {
	t.Helper()
	var text strings.Builder
	for _, e := range s.entries {
		text.WriteString(e.text + "\n")
	}
	lines, err := history.ReadAll(strings.NewReader(text.String()))
	if err != nil {
		t.Fatal(err)
	}
	return Check(lines, Options{})
}

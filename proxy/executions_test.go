package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestConversations(t *testing.T) {
	ts := newTestServer(t, Options{})

	res := ts.post("/v1/conversations", `{"metadata":{"user":"alice"},"ignored":1}`)
	requireStatus(t, res, http.StatusCreated)
	conv := decodeBody[api.Conversation](t, res)
	if !strings.HasPrefix(conv.ID, "conv_") || conv.Metadata["user"] != "alice" {
		t.Fatalf("conversation %+v", conv)
	}
	got := ts.get("/v1/conversations/" + conv.ID)
	requireStatus(t, got, http.StatusOK)
	if string(got.body) != string(res.body) {
		t.Fatalf("read %s, created %s", got.body, res.body)
	}

	// No body, and no Content-Type: {} with metadata {}.
	res = ts.do(request{method: http.MethodPost, path: "/v1/conversations"})
	requireStatus(t, res, http.StatusCreated)
	if conv := decodeBody[api.Conversation](t, res); conv.Metadata == nil || len(conv.Metadata) != 0 {
		t.Fatalf("metadata %v, want {}", conv.Metadata)
	}

	requireStatusBody(t, ts.post("/v1/conversations", `{"metadata":null}`), http.StatusBadRequest,
		validationBody("Invalid conversation request", "pointer", "/metadata", reasonObject))
	requireStatusBody(t, ts.post("/v1/conversations", `null`), http.StatusBadRequest,
		validationBody("Invalid conversation request", "pointer", "", reasonObject))
	requireStatusBody(t, ts.post("/v1/conversations", `{"metadata":`), http.StatusBadRequest,
		validationBody("Request body is not valid JSON", "pointer", "", reasonNotJSON))
	requireStatusBody(t, ts.get("/v1/conversations/conv_missing"), http.StatusNotFound,
		`{"code":"NOT_FOUND","message":"Conversation not found: conv_missing"}`)
}

func TestStartExecution(t *testing.T) {
	ts := newTestServer(t, Options{MaxRequiredCapabilities: 3})
	conv := ts.createConversation()
	validBody := func(extra string) string {
		return fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"hello runtime"%s}`, conv, extra)
	}

	t.Run("accepted", func(t *testing.T) {
		res := ts.post("/v1/executions", validBody(`,"requiredCapabilities":["event.replay","action.approval","event.replay"],"config":{"delayMs":0}`))
		requireStatus(t, res, http.StatusAccepted)
		if res.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a new execution is marked as replayed")
		}
		exec := decodeBody[api.Execution](t, res)
		if exec.State != api.ExecutionStateQueued || exec.ConversationID != conv || exec.ProviderID != "mock" ||
			strings.Join(exec.RequiredCapabilities, ",") != "action.approval,event.replay" {
			t.Fatalf("execution %+v", exec)
		}
		if final := ts.waitTerminal(exec.ID); final.State != api.ExecutionStateSucceeded ||
			final.FinalOutput == nil || *final.FinalOutput != "Echo: hello runtime" {
			t.Fatalf("final %+v", final)
		}
	})

	// The reference's HTTP tests, with exact bodies.
	for _, tc := range []struct {
		name   string
		req    request
		status int
		body   string
	}{
		{
			"only providerId",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(`{"providerId":"mock"}`)},
			http.StatusBadRequest, validationBody("Invalid execution request", "pointer", "/conversationId", reasonNonEmptyString),
		},
		{
			"truncated JSON without Content-Type",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(`{`)},
			http.StatusBadRequest, validationBody("Request body is not valid JSON", "pointer", "", reasonNotJSON),
		},
		{
			"truncated JSON with a form Content-Type (not checked)",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(`{`), header: map[string]string{"Content-Type": "text/plain"}},
			http.StatusBadRequest, validationBody("Request body is not valid JSON", "pointer", "", reasonNotJSON),
		},
		{
			"no body",
			request{method: http.MethodPost, path: "/v1/executions"},
			http.StatusBadRequest, validationBody("Request body is required", "pointer", "", reasonBodyRequired),
		},
		{
			"blank body",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(" \r\n")},
			http.StatusBadRequest, validationBody("Request body is required", "pointer", "", reasonBodyRequired),
		},
		{
			"null input",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":null}`, conv))},
			http.StatusBadRequest, validationBody("Invalid execution request", "pointer", "/input", "required, and must be a string"),
		},
		{
			"overflowing number in config",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(validBody(`,"config":{"delayMs":1e400}`))},
			http.StatusBadRequest, validationBody("Invalid execution request", "pointer", "/config", reasonObject),
		},
		{
			"201-unit idempotency key",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(validBody(`,"idempotencyKey":"` + strings.Repeat("k", 201) + `"`))},
			http.StatusBadRequest, validationBody("Invalid execution request", "pointer", "/idempotencyKey", "must be a string of 1 to 200 characters"),
		},
		{
			"empty capability name",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(validBody(`,"requiredCapabilities":[""]`))},
			http.StatusBadRequest, validationBody("Invalid execution request", "pointer", "/requiredCapabilities", "must be an array of non-empty strings"),
		},
		{
			"too many capabilities",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(validBody(`,"requiredCapabilities":["a","b","c","d"]`))},
			http.StatusBadRequest, validationBody("requiredCapabilities must not list more than 3 capabilities", "pointer", "/requiredCapabilities", "must list at most 3 capabilities"),
		},
		{
			"unknown conversation",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(`{"conversationId":"conv_missing","providerId":"mock","input":"x"}`)},
			http.StatusNotFound, `{"code":"NOT_FOUND","message":"Conversation not found: conv_missing"}`,
		},
		{
			"unknown provider",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(fmt.Sprintf(`{"conversationId":%q,"providerId":"dsh","input":"x"}`, conv))},
			http.StatusNotFound, `{"code":"PROVIDER_NOT_FOUND","message":"Provider not found: dsh"}`,
		},
		{
			"unsupported capability",
			request{method: http.MethodPost, path: "/v1/executions", body: ptr(validBody(`,"requiredCapabilities":["extension.sandbox","action.approval","toString"]`))},
			http.StatusUnprocessableEntity,
			`{"code":"CAPABILITY_UNSUPPORTED","details":{"capabilities":["extension.sandbox","toString"],"providerId":"mock"},"message":"Provider mock does not support required capabilities"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireStatusBody(t, ts.do(tc.req), tc.status, tc.body)
		})
	}
}

func TestIdempotencyOverHTTP(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	body := fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"once","config":{"a":1,"b":[1,2]},"idempotencyKey":"order-42"}`, conv)

	first := ts.post("/v1/executions", body)
	requireStatus(t, first, http.StatusAccepted)
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("first start marked as replayed")
	}
	// Same request, keys reordered and an unknown field: equivalent.
	again := ts.post("/v1/executions", fmt.Sprintf(`{"idempotencyKey":"order-42","config":{"b":[1,2],"a":1.0},"input":"once","providerId":"mock","conversationId":%q,"x":1}`, conv))
	requireStatus(t, again, http.StatusAccepted)
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay header = %q", again.header.Get("Idempotent-Replayed"))
	}
	if a, b := decodeBody[api.Execution](t, first).ID, decodeBody[api.Execution](t, again).ID; a != b {
		t.Fatalf("replay created %s, first was %s", b, a)
	}

	conflict := ts.post("/v1/executions", strings.Replace(body, `"once"`, `"once (conflicting request)"`, 1))
	requireStatusBody(t, conflict, http.StatusConflict,
		`{"code":"IDEMPOTENCY_CONFLICT","message":"Idempotency key was already used with a different execution request"}`)
}

func TestGetExecutionAndArtifacts(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("make a file", `{"artifactName":"synthetic.txt"}`, "artifact.list")
	final := ts.waitTerminal(exec.ID)
	if final.State != api.ExecutionStateSucceeded || final.EndedAt == nil || final.StartedAt == nil {
		t.Fatalf("final %+v", final)
	}

	res := ts.get("/v1/executions/" + exec.ID + "/artifacts")
	requireStatus(t, res, http.StatusOK)
	list := decodeBody[api.ArtifactList](t, res)
	if len(list.Artifacts) != 1 || list.Artifacts[0].Name != "synthetic.txt" || list.Artifacts[0].ID != "artifact-"+exec.ID {
		t.Fatalf("artifacts %+v", list)
	}
	// The listed artifact is exactly the artifact.created event's data.
	var eventData api.JSONObject
	for _, ev := range ts.eventList(exec.ID, "").Events {
		if ev.Type == api.StandardEventTypeArtifactCreated {
			eventData = typed(ev.Data.AsProviderEventData()) // the object as sent, every field
		}
	}
	listed := decodeBody[struct{ Artifacts []api.JSONObject }](t, res).Artifacts[0]
	if fmt.Sprint(listed) != fmt.Sprint(eventData) {
		t.Fatalf("listed %v, event data %v", listed, eventData)
	}

	// No artifacts: [] rather than null.
	plain := ts.start("no file", "")
	ts.waitTerminal(plain.ID)
	requireStatusBody(t, ts.get("/v1/executions/"+plain.ID+"/artifacts"), http.StatusOK, `{"artifacts":[]}`)

	requireStatusBody(t, ts.get("/v1/executions/exec_missing"), http.StatusNotFound,
		`{"code":"NOT_FOUND","message":"Execution not found: exec_missing"}`)
	requireStatusBody(t, ts.get("/v1/executions/exec_missing/artifacts"), http.StatusNotFound,
		`{"code":"NOT_FOUND","message":"Execution not found: exec_missing"}`)

	// A percent-encoded id is decoded before the lookup.
	encoded := strings.Replace(exec.ID, "_", "%5F", 1)
	if got := decodeBody[api.Execution](t, ts.get("/v1/executions/"+encoded)); got.ID != exec.ID {
		t.Fatalf("encoded id read %s", got.ID)
	}
}

func TestCancelExecution(t *testing.T) {
	ts := newTestServer(t, Options{})

	// Body validation comes before the existence check (a reference test relies on it).
	invalidReason := validationBody("Invalid cancellation request", "pointer", "/reason", "must be a string of 1 to 500 characters")
	requireStatusBody(t, ts.post("/v1/executions/missing:cancel", `{"reason":42}`), http.StatusBadRequest, invalidReason)
	requireStatusBody(t, ts.post("/v1/executions/missing:cancel", `{`), http.StatusBadRequest,
		validationBody("Request body is not valid JSON", "pointer", "", reasonNotJSON))
	for _, reason := range []string{`""`, `null`, `"` + strings.Repeat("r", 501) + `"`} {
		requireStatusBody(t, ts.post("/v1/executions/missing:cancel", `{"reason":`+reason+`}`), http.StatusBadRequest, invalidReason)
	}
	requireStatusBody(t, ts.post("/v1/executions/missing:cancel", ``), http.StatusNotFound,
		`{"code":"NOT_FOUND","message":"Execution not found: missing"}`)

	// The suffix: missing, or nothing before it.
	requireStatusBody(t, ts.post("/v1/executions/missing", `{}`), http.StatusBadRequest,
		`{"code":"VALIDATION_ERROR","message":"Path parameter suffix is invalid"}`)
	requireStatusBody(t, ts.post("/v1/executions/:cancel", `{}`), http.StatusBadRequest,
		`{"code":"VALIDATION_ERROR","message":"Path parameter suffix is invalid"}`)
	// … but the body is still checked first.
	requireStatusBody(t, ts.post("/v1/executions/missing", `{"reason":42}`), http.StatusBadRequest, invalidReason)

	// Cancel a running execution (slow mock), with the colon percent-encoded.
	exec := ts.start(strings.Repeat("word ", 200), `{"delayMs":50}`, "execution.cancel")
	ts.waitForEvent(exec.ID, api.StandardEventTypeRunStarted)
	res := ts.post("/v1/executions/"+exec.ID+"%3Acancel", `{"reason":"caller stopped"}`)
	requireStatus(t, res, http.StatusOK)
	if got := decodeBody[api.Execution](t, res); got.State != api.ExecutionStateCancelled || got.EndedAt == nil {
		t.Fatalf("cancelled execution %+v", got)
	}
	events := ts.eventList(exec.ID, "").Events
	last := events[len(events)-1]
	if last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != "caller stopped" {
		t.Fatalf("last event %+v", last)
	}
	cancelled := 0
	for _, ev := range events {
		if ev.Type == api.StandardEventTypeRunCancelled {
			cancelled++
		}
	}
	if cancelled != 1 {
		t.Fatalf("%d run.cancelled events", cancelled)
	}

	// Cancelling a terminal execution is a no-op answered with its snapshot.
	again := ts.post("/v1/executions/"+exec.ID+":cancel", `{"reason":"again"}`)
	requireStatus(t, again, http.StatusOK)
	if n := len(ts.eventList(exec.ID, "").Events); n != len(events) {
		t.Fatalf("no-op cancel appended events: %d → %d", len(events), n)
	}
}

func TestRespondToAction(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("deploy", `{"requireApproval":true,"artifactName":"plan.txt"}`, "action.approval", "artifact.list")
	actionID := typed(ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	respond := func(execID, actionPath, body string) result {
		return ts.post("/v1/executions/"+execID+"/actions/"+actionPath, body)
	}

	// Body presence and syntax come first …
	requireStatusBody(t, respond("missing", "x:respond", ``), http.StatusBadRequest,
		validationBody("Request body is required", "pointer", "", reasonBodyRequired))
	requireStatusBody(t, respond("missing", "x:respond", `{`), http.StatusBadRequest,
		validationBody("Request body is not valid JSON", "pointer", "", reasonNotJSON))
	// … then the path …
	requireStatusBody(t, respond(exec.ID, actionID, `{"approved":true}`), http.StatusBadRequest,
		`{"code":"VALIDATION_ERROR","message":"Path parameter suffix is invalid"}`)
	requireStatusBody(t, respond(exec.ID, ":respond", `{"approved":true}`), http.StatusBadRequest,
		`{"code":"VALIDATION_ERROR","message":"Path parameter suffix is invalid"}`)
	// … then the execution and the action, before the body's shape.
	requireStatusBody(t, respond("missing", actionID+":respond", `{"approved":"yes"}`), http.StatusNotFound,
		`{"code":"NOT_FOUND","message":"Execution not found: missing"}`)
	requireStatusBody(t, respond(exec.ID, "action_unknown:respond", `{"approved":"yes"}`), http.StatusNotFound,
		`{"code":"ACTION_NOT_FOUND","message":"Action not found: action_unknown"}`)

	// An invalid answer to the pending action: 400, and the action stays pending.
	requireStatusBody(t, respond(exec.ID, actionID+":respond", `{"approved":"yes"}`), http.StatusBadRequest,
		validationBody("Invalid action response", "pointer", "/approved", "must be true or false"))
	if state := ts.execution(exec.ID).State; state != api.ExecutionStateAwaitingApproval {
		t.Fatalf("state after an invalid answer = %s", state)
	}

	res := respond(exec.ID, actionID+"%3Arespond", `{"approved":true}`)
	requireStatus(t, res, http.StatusOK)
	if got := decodeBody[api.Execution](t, res); got.State != api.ExecutionStateRunning {
		t.Fatalf("state after approval = %s", got.State)
	}
	// A second answer, even an invalid one, is a conflict: the shape is checked last.
	requireStatusBody(t, respond(exec.ID, actionID+":respond", `{"approved":true}`), http.StatusConflict,
		`{"code":"ACTION_ALREADY_RESOLVED","message":"Action already resolved: `+actionID+`"}`)
	requireStatusBody(t, respond(exec.ID, actionID+":respond", `{"approved":"yes"}`), http.StatusConflict,
		`{"code":"ACTION_ALREADY_RESOLVED","message":"Action already resolved: `+actionID+`"}`)

	// Approval plus artifact ends succeeded with one artifact, and a JSON replay from
	// count-1 returns exactly the terminal event.
	final := ts.waitTerminal(exec.ID)
	if final.State != api.ExecutionStateSucceeded {
		t.Fatalf("final state %s", final.State)
	}
	if n := len(decodeBody[api.ArtifactList](t, ts.get("/v1/executions/"+exec.ID+"/artifacts")).Artifacts); n != 1 {
		t.Fatalf("%d artifacts", n)
	}
	all := ts.eventList(exec.ID, "").Events
	tail := ts.eventList(exec.ID, fmt.Sprintf("?after=%d", len(all)-1))
	if len(tail.Events) != 1 || tail.Events[0].Type != api.StandardEventTypeRunCompleted || tail.NextCursor != int64(len(all)) {
		t.Fatalf("replay from count-1: %+v", tail)
	}
}

func TestRespondAfterCancelIsActionNotFound(t *testing.T) {
	ts := newTestServer(t, Options{})
	exec := ts.start("deploy", `{"requireApproval":true}`)
	actionID := typed(ts.waitForEvent(exec.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	requireStatus(t, ts.post("/v1/executions/"+exec.ID+":cancel", ``), http.StatusOK)
	requireStatusBody(t, ts.post("/v1/executions/"+exec.ID+"/actions/"+actionID+":respond", `{"approved":true}`),
		http.StatusNotFound, `{"code":"ACTION_NOT_FOUND","message":"Action not found: `+actionID+`"}`)
}

// A turn interrupted by a newer start (busy policy interrupt) keeps why in its snapshot, and an
// answer to its abandoned approval is still 404 ACTION_NOT_FOUND (docs/protocol.md §7.2) but
// says the turn was interrupted and by which execution.
func TestRespondToAnInterruptedTurnSaysSo(t *testing.T) {
	ts := newTestServer(t, Options{})
	res := ts.post("/v1/conversations", `{"busyPolicy":"interrupt"}`)
	requireStatus(t, res, http.StatusCreated)
	conv := decodeBody[api.Conversation](t, res).ID
	startIn := func(input, config string) api.Execution {
		res := ts.post("/v1/executions", fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":%q,"config":%s}`, conv, input, config))
		requireStatus(t, res, http.StatusAccepted)
		return decodeBody[api.Execution](t, res)
	}
	asked := startIn("deploy", `{"requireApproval":true}`)
	actionID := typed(ts.waitForEvent(asked.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	next := startIn("no, wait", `{}`)
	if got := ts.waitTerminal(asked.ID); got.State != api.ExecutionStateCancelled || got.CancelReason == nil || *got.CancelReason != "Interrupted by "+next.ID {
		t.Fatalf("the interrupted turn: %+v", got)
	}
	requireStatusBody(t, ts.post("/v1/executions/"+asked.ID+"/actions/"+actionID+":respond", `{"approved":true}`),
		http.StatusNotFound, `{"code":"ACTION_NOT_FOUND","message":"Action not found: `+actionID+`: the turn was interrupted by `+next.ID+`"}`)
}

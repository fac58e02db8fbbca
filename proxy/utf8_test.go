package proxy

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Byte sequences that are not UTF-8, each of a different kind.
var notUTF8 = map[string]string{
	"a byte that never starts a character": "\xff",
	"a lone continuation byte":             "\x80",
	"truncated at the string's end":        "\xc3",
	"truncated before another character":   "\xe2\x82a",
	"an overlong encoding of '/'":          "\xc0\xaf",
	"a surrogate encoded in UTF-8":         "\xed\xa0\x80",
	"beyond U+10FFFF":                      "\xf4\x90\x80\x80",
}

// Issue 34: a string that is not UTF-8 anywhere in a body — the input, the metadata, the
// config, a key, a member the decoder ignores — was accepted and stored as U+FFFD. Now every
// body answers 400 VALIDATION_ERROR with the route's message and a reason saying so, as a body
// nested too deeply does. UTF-8 itself is accepted, U+FFFD and escaped surrogates included.
func TestBodiesMustBeUTF8(t *testing.T) {
	const start = `"conversationId":"conv_1","providerId":"mock"`
	for kind, bad := range notUTF8 {
		for name, body := range map[string]string{
			"input":                `{` + start + `,"input":"hello ` + bad + ` runtime"}`,
			"config value":         `{` + start + `,"input":"","config":{"model":"` + bad + `"}}`,
			"config key":           `{` + start + `,"input":"","config":{"` + bad + `":1}}`,
			"idempotency key":      `{` + start + `,"input":"","idempotencyKey":"k` + bad + `"}`,
			"an ignored member":    `{` + start + `,"input":"","note":["` + bad + `"]}`,
			"a capability":         `{` + start + `,"input":"","requiredCapabilities":["` + bad + `"]}`,
			"a member's own name":  `{` + start + `,"input":"","` + bad + `":1}`,
			"a string inside deep": `{` + start + `,"input":"","config":{"a":[[{"b":"x` + bad + `"}]]}}`,
		} {
			_, err := decodeStartExecutionRequest([]byte(body), 8)
			if got := validationReason(t, err); got != msgInvalidExecution+": "+reasonNotUTF8 {
				t.Errorf("start, %s in the %s: %s", kind, name, got)
			}
		}
		_, err := decodeConversationRequest([]byte(`{"metadata":{"user":"` + bad + `"}}`))
		if got := validationReason(t, err); got != msgInvalidConversation+": "+reasonNotUTF8 {
			t.Errorf("conversation, %s: %s", kind, got)
		}
		_, err = decodeCancelRequest([]byte(`{"reason":"` + bad + `"}`))
		if got := validationReason(t, err); got != msgInvalidCancellation+": "+reasonNotUTF8 {
			t.Errorf("cancel, %s: %s", kind, got)
		}
		for _, body := range []string{`{"value":"` + bad + `"}`, `{"approved":true,"metadata":{"by":"` + bad + `"}}`} {
			_, bodyErr, shapeErr := decodeActionResponse([]byte(body))
			if bodyErr != nil {
				t.Errorf("respond, %s: a body error (it must come after the action checks, as the depth does): %v", kind, bodyErr)
			}
			if got := validationReason(t, shapeErr); got != msgInvalidActionResponse+": "+reasonNotUTF8 {
				t.Errorf("respond, %s: %s", kind, got)
			}
		}
	}
	// Invalid JSON syntax is still that first; a body that is not an object still says so.
	if got := validationReason(t, decodeErr(decodeStartExecutionRequest([]byte("{\"input\":\"\xff\""), 8))); got != msgInvalidJSON+": not valid JSON" {
		t.Errorf("invalid JSON with a byte that is not UTF-8: %s", got)
	}
	if got := validationReason(t, decodeErr(decodeStartExecutionRequest([]byte("\"\xff\""), 8))); got != msgInvalidExecution+": "+reasonObject {
		t.Errorf("a string body with a byte that is not UTF-8: %s", got)
	}
	// UTF-8 of every length passes, and so do U+FFFD sent as such and the escapes JavaScript's
	// JSON.stringify writes for a lone surrogate (clients of the reference send them).
	for _, good := range []string{"héllo", "€", "\U0001F600", "\uFFFD", `\ud800`, `\udfff x`, "\u2028"} {
		body := `{` + start + `,"input":"` + good + `","config":{"k":"` + good + `"}}`
		if _, err := decodeStartExecutionRequest([]byte(body), 8); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
}

func decodeErr[T any](_ T, err error) error { return err }

// validationReason is a VALIDATION_ERROR's message and its one detail's reason.
func validationReason(t *testing.T, err error) string {
	t.Helper()
	message := validationMessage(t, err)
	var be *backend.Error
	errors.As(err, &be)
	entries, _ := be.Details["errors"].([]any)
	if len(entries) != 1 {
		t.Fatalf("%s: details %v, want one entry", message, be.Details)
	}
	reason, _ := entries[0].(map[string]any)["reason"].(string)
	return message + ": " + reason
}

// Over HTTP, through every route that reads a body: 400 with the Problem, and nothing of the
// request is stored (before, 202 and the input stored with U+FFFD in place of the byte).
func TestBodiesThatAreNotUTF8AreRefusedOverHTTP(t *testing.T) {
	ts := newTestServer(t, Options{})
	problem := func(message string) string {
		return `{"code":"VALIDATION_ERROR","details":{"errors":[{"pointer":"","reason":"` + reasonNotUTF8 + `"}]},"message":"` + message + `"}`
	}
	conv := ts.createConversation()
	body := `{"conversationId":"` + conv + `","providerId":"mock","input":"caf` + "\xe9" + `"}` // Latin-1, not UTF-8
	requireStatusBody(t, ts.do(request{method: http.MethodPost, path: "/v1/executions", body: &body}), http.StatusBadRequest, problem(msgInvalidExecution))
	if listed := ts.listPages("/v1/conversations/" + conv + "/executions"); len(listed) != 0 {
		t.Fatalf("the refused start stored %d executions", len(listed))
	}
	body = "{\"metadata\":{\"team\":\"\xff\"}}"
	requireStatusBody(t, ts.do(request{method: http.MethodPost, path: "/v1/conversations", body: &body}), http.StatusBadRequest, problem(msgInvalidConversation))

	running := ts.start("a b c d", `{"delayMs":10000}`)
	ts.waitForEvent(running.ID, api.StandardEventTypeRunStarted)
	body = "{\"reason\":\"stop \xc3\"}"
	requireStatusBody(t, ts.do(request{method: http.MethodPost, path: "/v1/executions/" + running.ID + ":cancel", body: &body}), http.StatusBadRequest, problem(msgInvalidCancellation))
	if got := ts.execution(running.ID).State; got != api.ExecutionStateRunning {
		t.Fatalf("after the refused cancel the execution is %s", got)
	}

	approval := ts.start("ask me", `{"requestInput":true}`)
	actionID := typed(ts.waitForEvent(approval.ID, api.StandardEventTypeActionRequired).Data.AsActionRequest()).ID
	body = "{\"value\":\"blue \xed\xa0\x80\"}"
	requireStatusBody(t, ts.do(request{method: http.MethodPost, path: "/v1/executions/" + approval.ID + "/actions/" + actionID + ":respond", body: &body}),
		http.StatusBadRequest, problem(msgInvalidActionResponse))
	if got := ts.execution(approval.ID).State; got != api.ExecutionStateAwaitingInput {
		t.Fatalf("after the refused answer the execution is %s", got)
	}
	// The answer in UTF-8 is taken.
	body = `{"value":"blue ✓"}`
	requireStatus(t, ts.do(request{method: http.MethodPost, path: "/v1/executions/" + approval.ID + "/actions/" + actionID + ":respond", body: &body}), http.StatusOK)
	if got := ts.waitTerminal(approval.ID).State; got != api.ExecutionStateSucceeded {
		t.Fatalf("after the answer the execution is %s", got)
	}
	if !strings.Contains(dataOf(t, ts, approval.ID, api.StandardEventTypeOutputTextDone), `ask me blue ✓`) {
		t.Fatal("the answer in UTF-8 is not kept as sent")
	}
}

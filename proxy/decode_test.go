package proxy

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// validationMessage returns the message of a VALIDATION_ERROR, failing the test for anything
// else.
func validationMessage(t *testing.T, err error) string {
	t.Helper()
	var be *backend.Error
	if !errors.As(err, &be) || be.Code != backend.CodeValidation {
		t.Fatalf("error %v (%T) is not a VALIDATION_ERROR", err, err)
	}
	return be.Message
}

func TestDecodeStartExecutionRequest(t *testing.T) {
	const valid = `"conversationId":"conv_1","providerId":"mock","input":""`
	ok := func(extra string) string { return "{" + valid + extra + "}" }
	emoji := "\U0001F600" // two UTF-16 code units

	cases := []struct {
		name, body, message string
	}{
		{"empty body", "", msgBodyRequired},
		{"whitespace body", " \n\t\r ", msgBodyRequired},
		{"unicode whitespace body", "\u00a0\ufeff\u2028\u2029\u3000\u202f", msgBodyRequired},
		{"NEL is not JavaScript whitespace", "\u0085", msgInvalidJSON},
		{"truncated", "{", msgInvalidJSON},
		{"trailing garbage", ok("") + "x", msgInvalidJSON},
		{"single quotes", "{'a':1}", msgInvalidJSON},
		{"null", "null", msgInvalidExecution},
		{"array", "[]", msgInvalidExecution},
		{"string", `"x"`, msgInvalidExecution},
		{"number", `1`, msgInvalidExecution},
		{"missing conversation", `{"providerId":"mock","input":""}`, msgInvalidExecution},
		{"empty conversation", `{"conversationId":"","providerId":"mock","input":""}`, msgInvalidExecution},
		{"conversation null", `{"conversationId":null,"providerId":"mock","input":""}`, msgInvalidExecution},
		{"conversation number", `{"conversationId":1,"providerId":"mock","input":""}`, msgInvalidExecution},
		{"case-folded key is unknown", `{"ConversationId":"c","providerId":"mock","input":""}`, msgInvalidExecution},
		{"only provider (reference test)", `{"providerId":"mock"}`, msgInvalidExecution},
		{"empty provider", `{"conversationId":"c","providerId":"","input":""}`, msgInvalidExecution},
		{"input missing", `{"conversationId":"c","providerId":"mock"}`, msgInvalidExecution},
		{"input null", `{"conversationId":"c","providerId":"mock","input":null}`, msgInvalidExecution},
		{"input number", `{"conversationId":"c","providerId":"mock","input":5}`, msgInvalidExecution},
		{"unknown busy policy", ok(`,"busyPolicy":"rollback"`), msgInvalidBusyPolicy},
		{"busy policy empty", ok(`,"busyPolicy":""`), msgInvalidBusyPolicy},
		{"busy policy null", ok(`,"busyPolicy":null`), msgInvalidBusyPolicy},
		{"capabilities null", ok(`,"requiredCapabilities":null`), msgInvalidExecution},
		{"capabilities string", ok(`,"requiredCapabilities":"a"`), msgInvalidExecution},
		{"capability empty", ok(`,"requiredCapabilities":["a",""]`), msgInvalidExecution},
		{"capability null", ok(`,"requiredCapabilities":[null]`), msgInvalidExecution},
		{"capability number", ok(`,"requiredCapabilities":[1]`), msgInvalidExecution},
		{"too many capabilities", ok(`,"requiredCapabilities":["a","b","c"]`), tooManyCapabilitiesMessage(2)},
		{"config null", ok(`,"config":null`), msgInvalidExecution},
		{"config array", ok(`,"config":[]`), msgInvalidExecution},
		{"config overflowing number", ok(`,"config":{"a":1e400}`), msgInvalidExecution},
		{"config nested overflowing number", ok(`,"config":{"a":[{"b":-1e999}]}`), msgInvalidExecution},
		{"key null", ok(`,"idempotencyKey":null`), msgInvalidExecution},
		{"key empty", ok(`,"idempotencyKey":""`), msgInvalidExecution},
		{"key number", ok(`,"idempotencyKey":7`), msgInvalidExecution},
		{"key 201 units", ok(`,"idempotencyKey":"` + strings.Repeat("k", 201) + `"`), msgInvalidExecution},
		{"key 101 astral chars = 202 units", ok(`,"idempotencyKey":"` + strings.Repeat(emoji, 101) + `"`), msgInvalidExecution},
		{"duplicate key, last is null", `{"conversationId":"c","conversationId":null,"providerId":"mock","input":""}`, msgInvalidExecution},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeStartExecutionRequest([]byte(tc.body), 2)
			if got := validationMessage(t, err); got != tc.message {
				t.Fatalf("message = %q, want %q", got, tc.message)
			}
		})
	}

	t.Run("full request", func(t *testing.T) {
		body := `{"conversationId":"conv_1","providerId":"mock","input":"hi","requiredCapabilities":["b","a","a"],` +
			`"config":{"delayMs":50,"nested":{"x":[1,"y",null,true]}},"idempotencyKey":"` + strings.Repeat(emoji, 100) + `",` +
			`"unknown":{"ignored":true},"INPUT":5}`
		req, err := decodeStartExecutionRequest([]byte(body), 3)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.Repeat(emoji, 100)
		want := api.StartExecutionRequest{
			ConversationID:       "conv_1",
			ProviderID:           "mock",
			Input:                "hi",
			RequiredCapabilities: &[]string{"b", "a", "a"},
			Config: api.JSONObject{"delayMs": float64(50), "nested": map[string]any{
				"x": []any{float64(1), "y", nil, true},
			}},
			IdempotencyKey: &key,
		}
		if !reflect.DeepEqual(req, want) {
			t.Fatalf("decoded %#v, want %#v", req, want)
		}
	})
	t.Run("key of exactly 200 units", func(t *testing.T) {
		body := ok(`,"idempotencyKey":"` + strings.Repeat("k", 199) + `é"`) // é is one unit, two bytes
		if _, err := decodeStartExecutionRequest([]byte(body), 2); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("content around the JSON is JSON whitespace", func(t *testing.T) {
		if _, err := decodeStartExecutionRequest([]byte("\n\t "+ok("")+" \r\n"), 2); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDecodeConversationRequest(t *testing.T) {
	for _, tc := range []struct{ name, body, message string }{
		{"invalid JSON", "{", msgInvalidJSON},
		{"null", "null", msgInvalidConversation},
		{"array", "[1]", msgInvalidConversation},
		{"metadata null", `{"metadata":null}`, msgInvalidConversation},
		{"metadata array", `{"metadata":[]}`, msgInvalidConversation},
		{"metadata string", `{"metadata":"x"}`, msgInvalidConversation},
		{"metadata overflowing number", `{"metadata":{"n":1e400}}`, msgInvalidConversation},
		{"unknown busy policy", `{"busyPolicy":"rollback"}`, msgInvalidBusyPolicy},
		{"busy policy of another case", `{"busyPolicy":"Reject"}`, msgInvalidBusyPolicy},
		{"busy policy null", `{"busyPolicy":null}`, msgInvalidBusyPolicy},
		{"busy policy number", `{"busyPolicy":1}`, msgInvalidBusyPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeConversationRequest([]byte(tc.body))
			if got := validationMessage(t, err); got != tc.message {
				t.Fatalf("message = %q, want %q", got, tc.message)
			}
		})
	}
	for _, tc := range []struct {
		name, body string
		want       api.JSONObject
	}{
		{"empty body", "", api.JSONObject{}},
		{"blank body", "  \n", api.JSONObject{}},
		{"empty object", "{}", api.JSONObject{}},
		{"unknown field", `{"other":1}`, api.JSONObject{}},
		{"metadata", `{"metadata":{"user":"alice","":0}}`, api.JSONObject{"user": "alice", "": float64(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := decodeConversationRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := *req.Metadata; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("metadata = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestDecodeCancelRequest(t *testing.T) {
	for _, tc := range []struct{ name, body, message string }{
		{"invalid JSON", "{", msgInvalidJSON},
		{"null", "null", msgInvalidCancellation},
		{"reason number (reference test)", `{"reason":42}`, msgInvalidCancellation},
		{"reason null", `{"reason":null}`, msgInvalidCancellation},
		{"reason empty", `{"reason":""}`, msgInvalidCancellation},
		{"reason 501 units", `{"reason":"` + strings.Repeat("r", 501) + `"}`, msgInvalidCancellation},
		{"reason 251 astral chars", `{"reason":"` + strings.Repeat("\U0001F600", 251) + `"}`, msgInvalidCancellation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeCancelRequest([]byte(tc.body))
			if got := validationMessage(t, err); got != tc.message {
				t.Fatalf("message = %q, want %q", got, tc.message)
			}
		})
	}
	for _, tc := range []struct {
		name, body string
		want       *string
	}{
		{"empty body", "", nil},
		{"empty object", "{}", nil},
		{"unknown field", `{"why":"x"}`, nil},
		{"reason", `{"reason":"caller stopped"}`, ptr("caller stopped")},
		{"reason of 500 units", `{"reason":"` + strings.Repeat("r", 500) + `"}`, ptr(strings.Repeat("r", 500))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeCancelRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("reason = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecodeActionResponse(t *testing.T) {
	for _, tc := range []struct {
		name, body  string
		bodyMessage string // reported first
		shapeMsg    string // reported last
	}{
		{"empty body", "", msgBodyRequired, ""},
		{"blank body", " ", msgBodyRequired, ""},
		{"invalid JSON", `{"approved":`, msgInvalidJSON, ""},
		{"null", "null", "", msgInvalidActionResponse},
		{"array", "[]", "", msgInvalidActionResponse},
		{"approved string (reference test)", `{"approved":"yes"}`, "", msgInvalidActionResponse},
		{"approved null", `{"approved":null}`, "", msgInvalidActionResponse},
		{"metadata null", `{"metadata":null}`, "", msgInvalidActionResponse},
		{"metadata array", `{"metadata":[]}`, "", msgInvalidActionResponse},
		{"value overflowing number", `{"value":[1e400]}`, "", msgInvalidActionResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bodyErr, shapeErr := decodeActionResponse([]byte(tc.body))
			if tc.bodyMessage != "" {
				if got := validationMessage(t, bodyErr); got != tc.bodyMessage {
					t.Fatalf("body error = %q, want %q", got, tc.bodyMessage)
				}
				return
			}
			if bodyErr != nil {
				t.Fatalf("unexpected body error %v", bodyErr)
			}
			if got := validationMessage(t, shapeErr); got != tc.shapeMsg {
				t.Fatalf("shape error = %q, want %q", got, tc.shapeMsg)
			}
		})
	}

	var null any
	text := any("synthetic response")
	for _, tc := range []struct {
		name, body string
		want       api.ActionResponse
	}{
		{"empty object", `{}`, api.ActionResponse{}},
		{"decision and message", `{"decision":"reject","message":"not today"}`, api.ActionResponse{Decision: ptr(api.DecisionReject), Message: ptr("not today")}},
		{"edit", `{"decision":"edit","arguments":{"a":1}}`, api.ActionResponse{Decision: ptr(api.DecisionEdit), Arguments: &api.JSONObject{"a": float64(1)}}},
		{"option", `{"optionId":"allow-always"}`, api.ActionResponse{OptionID: ptr("allow-always")}},
		{"approved", `{"approved":true}`, api.ActionResponse{Approved: ptr(true)}},
		{"denied", `{"approved":false}`, api.ActionResponse{Approved: ptr(false)}},
		{"value null is an answer", `{"value":null}`, api.ActionResponse{Value: &null}},
		{"value string", `{"value":"synthetic response"}`, api.ActionResponse{Value: &text}},
		{"metadata", `{"metadata":{"a":1}}`, api.ActionResponse{Metadata: &api.JSONObject{"a": float64(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, bodyErr, shapeErr := decodeActionResponse([]byte(tc.body))
			if bodyErr != nil || shapeErr != nil {
				t.Fatalf("errors %v / %v", bodyErr, shapeErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestUTF16LenWithin(t *testing.T) {
	for _, tc := range []struct {
		s        string
		min, max int
		want     bool
	}{
		{"", 1, 5, false},
		{"a", 1, 1, true},
		{"ab", 1, 1, false},
		{"é", 1, 1, true},           // two bytes, one unit
		{"\U0001F600", 1, 1, false}, // four bytes, two units
		{"\U0001F600", 2, 2, true},
		{"\uFFFF", 1, 1, true},
	} {
		if got := utf16LenWithin(tc.s, tc.min, tc.max); got != tc.want {
			t.Errorf("utf16LenWithin(%q, %d, %d) = %v, want %v", tc.s, tc.min, tc.max, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// An answer with a member the API does not know is refused (the reference drops it: a typo
// quietly denied the run), naming the member and what was probably meant; so is a member of the
// extension with the wrong type. The shape error comes where the reference checks the body, last.
func TestDecodeActionResponseIsStrict(t *testing.T) {
	for _, tc := range []struct {
		name, body, pointer, suggestion string
	}{
		{"a typo of approved", `{"approve":true}`, "/approve", "approved"},
		{"the answer wrapped", `{"response": {"approved": true}}`, "/response", `{"approved":true}`},
		{"another name for the message", `{"decision":"reject","reason":"no"}`, "/reason", "message"},
		{"a near miss", `{"optionID":"x"}`, "/optionID", "optionId"},
		{"nothing near", `{"approved":true,"zzz":1}`, "/zzz", ""},
		{"a pointer escapes its member", `{"a/b":1}`, "/a~1b", ""},
		{"the first unknown in body order", `{"zzz":1,"approve":true}`, "/zzz", ""},
		{"an unknown decision", `{"decision":"maybe"}`, "/decision", ""},
		{"arguments not an object", `{"decision":"edit","arguments":[1]}`, "/arguments", ""},
		{"an empty message", `{"decision":"reject","message":""}`, "/message", ""},
		{"an empty option", `{"optionId":""}`, "/optionId", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bodyErr, shapeErr := decodeActionResponse([]byte(tc.body))
			if bodyErr != nil || shapeErr == nil {
				t.Fatalf("errors %v / %v: want a shape error", bodyErr, shapeErr)
			}
			if got := validationMessage(t, shapeErr); got != msgInvalidActionResponse {
				t.Fatalf("message %q", got)
			}
			field := shapeErr.(*backend.Error).Details["errors"].([]any)[0].(map[string]any)
			if field["pointer"] != tc.pointer {
				t.Errorf("pointer %v, want %s", field["pointer"], tc.pointer)
			}
			if got, _ := field["suggestion"].(string); got != tc.suggestion {
				t.Errorf("suggestion %q, want %q", got, tc.suggestion)
			}
		})
	}
}

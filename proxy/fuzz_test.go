package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// The fuzz targets run as ordinary tests over their seeds (f.Add and testdata/fuzz/…) and
// explore with `go test -fuzz=FuzzName ./proxy/`. Each asserts two things for any input: no
// panic, and either a valid decoded value or a 400 VALIDATION_ERROR Problem carrying one of
// the reference's messages, with exactly the keys code and message.

var decoderMessages = map[string]bool{
	msgBodyRequired:          true,
	msgInvalidJSON:           true,
	msgInvalidConversation:   true,
	msgInvalidExecution:      true,
	msgInvalidCancellation:   true,
	msgInvalidActionResponse: true,
	msgInvalidAfter:          true,
	msgInvalidLastEventID:    true,
	msgInvalidLimit:          true,
	msgInvalidBusyPolicy:     true,
}

const fuzzMaxCapabilities = 8

// requireValidationProblem checks that err becomes a well-formed 400 Problem.
func requireValidationProblem(t *testing.T, err error, allowed ...string) {
	t.Helper()
	p, expected := problemOf(err)
	if !expected || p.status != http.StatusBadRequest || p.body.Code != "VALIDATION_ERROR" {
		t.Fatalf("error %v became %d %+v (expected=%v)", err, p.status, p.body, expected)
	}
	ok := decoderMessages[p.body.Message]
	for _, m := range allowed {
		ok = ok || p.body.Message == m
	}
	if !ok {
		t.Fatalf("unexpected message %q", p.body.Message)
	}
	raw, merr := json.Marshal(p.body)
	if merr != nil {
		t.Fatal(merr)
	}
	requireFieldDetails(t, raw)
}

// requireFieldDetails checks that a VALIDATION_ERROR body is {code, message, details} and that
// details is a ValidationErrorDetails naming exactly one place: a pointer to the whole body or to
// one of its top-level members, a query parameter or a header, with a reason.
func requireFieldDetails(t *testing.T, raw []byte) {
	t.Helper()
	var body struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || len(keys) != 3 || json.Unmarshal(raw, &body) != nil {
		t.Fatalf("Problem body %s is not exactly {code, message, details}", raw)
	}
	var details struct {
		Errors []map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(body.Details, &details); err != nil || len(details.Errors) != 1 {
		t.Fatalf("details %s: want {\"errors\": [one field]}", body.Details)
	}
	field := details.Errors[0]
	if suggestion, ok := field["suggestion"]; ok && suggestion != "" {
		delete(field, "suggestion") // what was probably meant, beside the place and the reason
	}
	if len(field) != 2 || field["reason"] == "" {
		t.Fatalf("details %s: want one place and a reason", body.Details)
	}
	pointer, isPointer := field["pointer"]
	switch {
	case isPointer && (pointer == "" || strings.Count(pointer, "/") == 1 && strings.HasPrefix(pointer, "/")):
	case isPointer && field["reason"] == reasonDuplicate && strings.HasPrefix(pointer, "/"): // at any depth
	case field["parameter"] != "" || field["header"] != "":
	default:
		t.Fatalf("details %s name no place of the request", body.Details)
	}
}

// requireNoDuplicate fails when an accepted body repeats a member name: the reference decoder's
// own check (refFirstDuplicate, on encoding/json's tokens) must find none, as encoding/json/v2
// would refuse it.
func requireNoDuplicate(t *testing.T, body []byte) {
	t.Helper()
	if at, dup := refFirstDuplicate(body); dup {
		t.Fatalf("accepted %q, which repeats %s", body, at)
	}
}

func addBodySeeds(f *testing.F) {
	for _, s := range []string{
		"", " ", "{", "}", "null", "[]", `"x"`, "1", "{}", "\ufeff{}",
		`{"conversationId":"conv_1","providerId":"mock","input":"hello runtime"}`,
		`{"conversationId":"c","providerId":"mock","input":"","requiredCapabilities":["action.approval","a","a"],"config":{"delayMs":50,"requireApproval":true},"idempotencyKey":"k"}`,
		`{"conversationId":"c","providerId":"mock","input":"","config":{"n":1e400}}`,
		`{"providerId":"mock"}`,
		`{"metadata":{"user":"alice"}}`, `{"metadata":null}`,
		`{"busyPolicy":"enqueue"}`, `{"metadata":{},"busyPolicy":"rollback"}`, `{"busyPolicy":null}`,
		`{"conversationId":"c","providerId":"mock","input":"","busyPolicy":"interrupt"}`,
		`{"reason":"caller stopped"}`, `{"reason":42}`, `{"reason":""}`, `{"reason":null}`,
		`{"approved":true}`, `{"approved":"yes"}`, `{"value":null,"metadata":{}}`, `{"value":[1e999]}`,
		`{"approve":true}`, `{"response":{"approved":true}}`, `{"decision":"edit","arguments":{"a":1}}`,
		`{"decision":"maybe"}`, `{"optionId":""}`, `{"message":""}`, `{"a/b~c":1}`, `{"approved":true,"approved":1}`,
		`{"idempotencyKey":"\ud83d\ude00"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
		"{\"input\":\"caf\xe9\"}", "{\"metadata\":{\"\xc0\xaf\":1}}", "{\"reason\":\"\xed\xa0\x80\"}", "{\"value\":[\"\xf4\x90\x80\x80\"]}",
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		// Issue 44: repeated member names (at any depth, escaped or not) and NUL in ids.
		`{"approved":true,"approved":false}`, `{"metadata":{"a":1,"\u0061":2}}`, `{"value":[{},{"x":[{"y":1,"y":1}]}]}`,
		`{"conversationId":"c","providerId":"mock","input":"","config":{"a~/":1,"a~/":2}}`,
		`{"conversationId":"c\u0000","providerId":"mock","input":""}`, `{"conversationId":"c","providerId":"mock","input":"\u0000"}`,
		`{"conversationId":"c","providerId":"mock","input":"","requiredCapabilities":["\u0000"]}`, `{"decision":"respond","optionId":"o\u0000"}`,
	} {
		f.Add([]byte(s))
	}
}

func FuzzDecodeStartExecutionRequest(f *testing.F) {
	addBodySeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeStartExecutionRequest(body, fuzzMaxCapabilities)
		if err != nil {
			requireValidationProblem(t, err, tooManyCapabilitiesMessage(fuzzMaxCapabilities))
			return
		}
		requireUTF8(t, body)
		requireNoDuplicate(t, body)
		if req.ConversationID == "" || req.ProviderID == "" {
			t.Fatalf("accepted empty ids: %+v", req)
		}
		if hasNUL(req.ConversationID) || hasNUL(req.ProviderID) {
			t.Fatalf("accepted an id with NUL: %+v", req)
		}
		if req.RequiredCapabilities != nil {
			if len(*req.RequiredCapabilities) > fuzzMaxCapabilities {
				t.Fatalf("accepted %d capabilities", len(*req.RequiredCapabilities))
			}
			for _, c := range *req.RequiredCapabilities {
				if c == "" {
					t.Fatal("accepted an empty capability")
				}
			}
		}
		if k := req.IdempotencyKey; k != nil {
			if n := len(utf16.Encode([]rune(*k))); n < 1 || n > maxIdempotencyKeyUnits {
				t.Fatalf("accepted a key of %d UTF-16 units", n)
			}
		}
		requireRoundTrip(t, req, func(b []byte) (any, error) { return decodeStartExecutionRequest(b, fuzzMaxCapabilities) })
	})
}

func FuzzDecodeConversationRequest(f *testing.F) {
	addBodySeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeConversationRequest(body)
		if err != nil {
			requireValidationProblem(t, err)
			return
		}
		requireUTF8(t, body)
		requireNoDuplicate(t, body)
		if req.Metadata == nil || *req.Metadata == nil {
			t.Fatal("metadata is nil")
		}
		requireRoundTrip(t, req, func(b []byte) (any, error) { return decodeConversationRequest(b) })
	})
}

func FuzzDecodeCancelRequest(f *testing.F) {
	addBodySeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		reason, err := decodeCancelRequest(body)
		if err != nil {
			requireValidationProblem(t, err)
			return
		}
		requireUTF8(t, body)
		requireNoDuplicate(t, body)
		if reason != nil {
			if n := len(utf16.Encode([]rune(*reason))); n < 1 || n > maxReasonUnits {
				t.Fatalf("accepted a reason of %d UTF-16 units", n)
			}
		}
	})
}

func FuzzDecodeActionResponse(f *testing.F) {
	addBodySeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, bodyErr, shapeErr := decodeActionResponse(body)
		if bodyErr != nil && shapeErr != nil {
			t.Fatal("both a body error and a shape error")
		}
		if bodyErr != nil {
			requireValidationProblem(t, bodyErr)
			return
		}
		if shapeErr != nil {
			requireValidationProblem(t, shapeErr)
			return
		}
		requireUTF8(t, body)
		requireNoDuplicate(t, body)
		requireRoundTrip(t, resp, func(b []byte) (any, error) {
			r, bodyErr, shapeErr := decodeActionResponse(b)
			if bodyErr != nil {
				return r, bodyErr
			}
			return r, shapeErr
		})
	})
}

// requireUTF8 fails t when an accepted body is not UTF-8 (issue 34: such bytes were stored as
// U+FFFD).
func requireUTF8(t *testing.T, body []byte) {
	t.Helper()
	if !utf8.Valid(body) {
		t.Fatalf("accepted a body that is not UTF-8: %q", body)
	}
}

// requireRoundTrip checks that an accepted value, encoded as the SDK would send it, decodes to
// the same value: the decoder accepts everything it can produce.
func requireRoundTrip(t *testing.T, v any, decode func([]byte) (any, error)) {
	t.Helper()
	encoded, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("accepted a value that cannot be encoded: %v", err)
	}
	again, err := decode(encoded)
	if err != nil {
		t.Fatalf("re-decoding %s: %v", encoded, err)
	}
	reencoded, _ := json.Marshal(again)
	if string(reencoded) != string(encoded) {
		t.Fatalf("round trip changed the value:\n%s\n%s", encoded, reencoded)
	}
}

// FuzzEventCursor covers the cursor and page-size parsing of the events operation: the query
// string and the Last-Event-ID header.
func FuzzEventCursor(f *testing.F) {
	for _, seed := range [][2]string{
		{"", ""}, {"after=0", ""}, {"after=7", ""}, {"after=", ""}, {"after=-1", ""},
		{"after=1.5", ""}, {"after=not-a-number", ""}, {"after=9007199254740991", ""},
		{"after=9007199254740992", ""}, {"after=%zz", ""}, {"after=1&after=x", ""},
		{"after=2", "5"}, {"after=2", "x"}, {"", "9007199254740992"}, {"limit=0", ""},
		{"limit=10&after=3", ""}, {"limit=%", ""}, {"after=+5", " 5"},
	} {
		f.Add(seed[0], seed[1])
	}
	h := New(nil, Options{MaxPageSize: 50})
	f.Fuzz(func(t *testing.T, rawQuery, lastEventID string) {
		r := &http.Request{URL: &url.URL{RawQuery: rawQuery}, Header: http.Header{}}
		if lastEventID != "" {
			r.Header.Set("Last-Event-ID", lastEventID)
		}
		cursor, err := eventCursor(r)
		if err != nil {
			requireValidationProblem(t, err)
		} else {
			if cursor < 0 || cursor > maxCursor {
				t.Fatalf("cursor %d out of range", cursor)
			}
			want := lastEventID
			if want == "" {
				want, _, _ = queryParam(rawQuery, "after")
			}
			if want == "" {
				want = "0"
			}
			if n, perr := strconv.ParseUint(want, 10, 64); perr != nil || int64(n) != cursor {
				t.Fatalf("cursor %d from query %q, header %q", cursor, rawQuery, lastEventID)
			}
		}
		limit, err := h.pageSize(r)
		if err != nil {
			requireValidationProblem(t, err)
		} else if limit < 1 || limit > 50 {
			t.Fatalf("page size %d outside [1, 50]", limit)
		}
	})
}

// FuzzResolve checks the router never panics and never sends an id with the cancel suffix to
// getExecution.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"/healthz", "/v1/runtime", "/v1/executions/a:cancel", "/v1/executions/a%3Acancel",
		"/v1/executions/a/actions/b:respond", "/v1/executions/a/actions/b", "/v1/executions/%",
		"/v1/executions/a%2F:cancel/events", "/v1/conversations/%00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		tg := resolve(path)
		switch tg.res {
		case resExecution:
			if strings.HasSuffix(tg.id, cancelSuffix) || tg.id == "" {
				t.Fatalf("getExecution would see %q", tg.id)
			}
		case resConversation, resArtifacts, resEvents, resActionWithoutVerb:
			if tg.id == "" {
				t.Fatalf("%v with an empty id", tg.res)
			}
		}
	})
}

package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/backend"
)

// nested returns a JSON array nested depth levels deep around inner ("[[[inner]]]").
func nested(depth int, inner string) string {
	return strings.Repeat("[", depth) + inner + strings.Repeat("]", depth)
}

// nestedObject returns {"a":{"a":…{}}} nested depth levels deep.
func nestedObject(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// tokenDepth is the test's independent measure: the deepest nesting json.Decoder's token walk
// sees, and whether the whole input is one valid JSON value.
func tokenDepth(body []byte) (maxDepth int, valid bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return maxDepth, false
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			maxDepth = max(maxDepth, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			_, err := dec.Token()
			return maxDepth, err == io.EOF
		}
	}
}

func TestDepthLimitOnEveryBody(t *testing.T) {
	const valid = `"conversationId":"conv_1","providerId":"mock","input":""`
	start := func(config string) string { return `{` + valid + `,"config":` + config + `}` }
	deepest := backend.MaxJSONDepth

	cases := []struct {
		name, body, message string // message "" = accepted
	}{
		{"config at the limit", start(nestedObject(deepest)), ""},
		{"config array inside at the limit", start(`{"a":` + nested(deepest-1, "1") + `}`), ""},
		{"config one past the limit", start(nestedObject(deepest + 1)), msgInvalidExecution},
		{"config 9,998 deep (issue 12)", start(`{"a":` + nested(9997, "") + `}`), msgInvalidExecution},
		{"config deeper than encoding/json decodes", start(`{"a":` + nested(20000, "") + `}`), msgInvalidExecution},
		{"deep unknown member", `{` + valid + `,"x":` + nested(deepest+1, "") + `}`, msgInvalidExecution},
		{"deep but invalid JSON: syntax wins", start(`{"a":`+nested(100, "")+`}`) + ",", msgInvalidJSON},
		{"deep and truncated", start(`{"a":` + nested(20000, "")), msgInvalidJSON},
		{"brackets inside a string do not count", start(`{"a":"` + strings.Repeat("[{", 5000) + `"}`), ""},
		{"escaped quote does not end the string", start(`{"a":"\"` + strings.Repeat("[", 100) + `"}`), ""},
		{"deep array body", nested(deepest+2, ""), msgInvalidExecution},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeStartExecutionRequest([]byte(tc.body), 8)
			if tc.message == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if got := validationMessage(t, err); got != tc.message {
				t.Fatalf("message = %q, want %q", got, tc.message)
			}
		})
	}

	t.Run("conversation metadata", func(t *testing.T) {
		if _, err := decodeConversationRequest([]byte(`{"metadata":` + nestedObject(deepest) + `}`)); err != nil {
			t.Fatalf("metadata at the limit refused: %v", err)
		}
		_, err := decodeConversationRequest([]byte(`{"metadata":` + nestedObject(deepest+1) + `}`))
		if got := validationMessage(t, err); got != msgInvalidConversation {
			t.Fatalf("message = %q", got)
		}
	})
	t.Run("cancel body", func(t *testing.T) {
		_, err := decodeCancelRequest([]byte(`{"reason":"r","x":` + nested(deepest+1, "") + `}`))
		if got := validationMessage(t, err); got != msgInvalidCancellation {
			t.Fatalf("message = %q", got)
		}
	})
	t.Run("action response value and metadata", func(t *testing.T) {
		for _, body := range []string{
			`{"value":` + nested(deepest+1, "") + `}`,
			`{"metadata":` + nestedObject(deepest+1) + `}`,
		} {
			_, bodyErr, shapeErr := decodeActionResponse([]byte(body))
			if bodyErr != nil {
				t.Fatalf("too deep is a body error (it must come after the action checks): %v", bodyErr)
			}
			if got := validationMessage(t, shapeErr); got != msgInvalidActionResponse {
				t.Fatalf("message = %q", got)
			}
		}
		if _, bodyErr, shapeErr := decodeActionResponse([]byte(`{"value":` + nested(deepest, "") + `}`)); bodyErr != nil || shapeErr != nil {
			t.Fatalf("value at the limit refused: %v %v", bodyErr, shapeErr)
		}
	})
}

// TestDepthLimitOverHTTP is issue 12's request: 202 before, 400 now, and nothing is stored.
func TestDepthLimitOverHTTP(t *testing.T) {
	ts := newTestServer(t, Options{})
	conv := ts.createConversation()
	body := `{"conversationId":"` + conv + `","providerId":"mock","input":"x","config":{"a":` + nested(9997, "") + `}}`
	res := ts.do(request{method: http.MethodPost, path: "/v1/executions", body: &body})
	requireStatusBody(t, res, http.StatusBadRequest, `{"code":"VALIDATION_ERROR","details":{"errors":[{"pointer":"","reason":"nested more than 64 levels deep"}]},"message":"Invalid execution request"}`)

	// The validation order stays the reference's: a deep config for an unknown conversation is
	// still a schema error (checked before the conversation), and a deep action response for an
	// unknown execution is still 404 (the shape is checked last).
	body = `{"conversationId":"conv_missing","providerId":"mock","input":"x","config":` + nestedObject(65) + `}`
	res = ts.do(request{method: http.MethodPost, path: "/v1/executions", body: &body})
	requireStatus(t, res, http.StatusBadRequest)
	deep := `{"value":` + nested(100, "") + `}`
	res = ts.send(request{method: http.MethodPost, path: "/v1/executions/exec_missing/actions/action_x:respond", body: &deep})
	requireStatus(t, res, http.StatusNotFound)

	body = `{"metadata":` + nestedObject(65) + `}`
	res = ts.do(request{method: http.MethodPost, path: "/v1/conversations", body: &body})
	requireStatusBody(t, res, http.StatusBadRequest, `{"code":"VALIDATION_ERROR","details":{"errors":[{"pointer":"","reason":"nested more than 64 levels deep"}]},"message":"Invalid conversation request"}`)
}

// FuzzJSONDepth checks the byte scan against json.Decoder's token walk and utf8.Valid, the
// depth-free syntax check against json.Valid, and that no decoder accepts a body nested past
// the limit.
func FuzzJSONDepth(f *testing.F) {
	addBodySeeds(f)
	for _, s := range []string{
		nested(65, ""), nested(66, ""), nestedObject(65), nestedObject(66),
		`{"a":"\\"}` + nested(70, ""), `["\"[[[["]`, `"\\\\"`, `{"config":` + nested(64, `"]]]]"`) + `}`,
		nested(70, "") + "x", nested(70, "1e400"),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		depth, valid := tokenDepth(body)
		if got := validJSONAnyDepth(body); got != valid {
			t.Fatalf("validJSONAnyDepth = %v, token walk says %v", got, valid)
		}
		if depth <= 10000 && valid != json.Valid(body) {
			t.Fatalf("validJSONAnyDepth = %v, json.Valid = %v", valid, json.Valid(body))
		}
		if valid {
			for _, limit := range []int{0, 1, 2, maxBodyDepth} {
				if got, want := backend.ExceedsJSONDepth(body, limit), depth > limit; got != want {
					t.Fatalf("ExceedsJSONDepth(%d) = %v, depth is %d", limit, got, depth)
				}
			}
			// Valid JSON is ASCII outside its strings, so the scan of the strings alone tells
			// whether the whole body is UTF-8.
			if tooDeep, notUTF8 := backend.ScanJSONText(body, maxBodyDepth); !tooDeep && notUTF8 == utf8.Valid(body) {
				t.Fatalf("ScanJSONText says not UTF-8 %v, utf8.Valid %v", notUTF8, utf8.Valid(body))
			}
		}
		_, err := decodeStartExecutionRequest(body, fuzzMaxCapabilities)
		if valid && depth > maxBodyDepth && (err == nil || validationMessage(t, err) != msgInvalidExecution) {
			t.Fatalf("a body %d deep got %v", depth, err)
		}
		if !valid && err != nil && errors.Is(err, errTooDeep) {
			t.Fatal("invalid JSON reported as too deep")
		}
		_, bodyErr, shapeErr := decodeActionResponse(body)
		if valid && depth > maxBodyDepth && (bodyErr != nil || shapeErr == nil) {
			t.Fatalf("a body %d deep got %v / %v", depth, bodyErr, shapeErr)
		}
	})
}

package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
)

// FuzzServeBodies sends arbitrary bodies through the whole handler over the real runtime, on
// routes where no input can create anything (the conversation and execution do not exist),
// so every answer must be a Problem: 400 VALIDATION_ERROR, 404 NOT_FOUND or 413.
func FuzzServeBodies(f *testing.F) {
	addBodySeeds(f)
	rt, err := local.Open(f.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	h := New(rt, Options{MaxBodyBytes: 4096})
	paths := []string{
		"/v1/executions",
		"/v1/executions/exec_missing:cancel",
		"/v1/executions/exec_missing",
		"/v1/executions/exec_missing/actions/action_missing:respond",
		"/v1/executions/exec_missing/actions/action_missing",
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range paths {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))

			if ct := rec.Header().Get("Content-Type"); ct != contentTypeJSON {
				t.Fatalf("POST %s: Content-Type %q", path, ct)
			}
			var problem map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &problem); err != nil {
				t.Fatalf("POST %s: body %q is not JSON", path, rec.Body.Bytes())
			}
			code, _ := problem["code"].(string)
			message, _ := problem["message"].(string)
			if _, hasDetails := problem["details"]; hasDetails && rec.Code == http.StatusBadRequest {
				requireFieldDetails(t, rec.Body.Bytes()) // which field a VALIDATION_ERROR is about
			} else if len(problem) != 2 || message == "" {
				t.Fatalf("POST %s: %d %s is not a Problem", path, rec.Code, rec.Body.Bytes())
			}
			switch {
			case rec.Code == http.StatusBadRequest && code == "VALIDATION_ERROR":
			case rec.Code == http.StatusRequestEntityTooLarge && code == "VALIDATION_ERROR":
			case rec.Code == http.StatusNotFound && code == "NOT_FOUND" &&
				(message == "Execution not found: exec_missing" || strings.HasPrefix(message, "Conversation not found: ")):
			default:
				t.Fatalf("POST %s: unexpected %d %s", path, rec.Code, rec.Body.Bytes())
			}
		}
	})
}

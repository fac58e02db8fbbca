package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
)

const contentTypeJSON = "application/json"

// contentTypeJSONValue is the Content-Type of every JSON answer, shared rather than made per
// answer (as Header.Set would): header values are replaced, never written in place, by net/http
// and Caddy.
var contentTypeJSONValue = []string{contentTypeJSON}

// writeJSON answers v as compact JSON, the reference's format (no trailing newline).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a value the runtime should never produce (a NaN in a config) gets here.
		status = http.StatusInternalServerError
		body = []byte(`{"code":"INTERNAL_ERROR","message":"` + msgUnexpected + `"}`)
	}
	writeRawJSON(w, status, body)
}

// writeRawJSON answers body, which must already be JSON.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	hdr := w.Header()
	hdr["Content-Type"] = contentTypeJSONValue
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // a write error means the client left; nothing to tell it
}

package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// rawClient sends requests the SDK would never send (malformed bodies, bad cursors) and reads
// answers the SDK would hide (status lines, exact Problem bodies, SSE framing).
type rawClient struct {
	base   string
	http   *http.Client
	header http.Header
}

type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// maxBody bounds what a raw answer may be; anything longer is not a protocol answer.
const maxBody = 8 << 20

// do sends method path with body (nil for none; no Content-Type is set unless given in hdr).
func (c *rawClient) do(ctx context.Context, method, path string, body []byte, hdr http.Header) (rawResponse, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := c.request(ctx, method, path, r, hdr)
	if err != nil {
		return rawResponse{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return rawResponse{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return rawResponse{}, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func (c *rawClient) request(ctx context.Context, method, path string, body io.Reader, hdr http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	for name, values := range c.header {
		req.Header[name] = append([]string(nil), values...)
	}
	for name, values := range hdr {
		req.Header[name] = append([]string(nil), values...)
	}
	return req, nil
}

// postJSON sends v as a JSON body.
func (c *rawClient) postJSON(ctx context.Context, path string, v any) (rawResponse, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return rawResponse{}, err
	}
	return c.do(ctx, http.MethodPost, path, b, http.Header{"Content-Type": {"application/json"}})
}

// escape is a path segment as the SDK sends it.
func escape(id string) string { return url.PathEscape(id) }

// expectProblem checks status and that the body is exactly the Problem want (no other keys;
// details only when want has them). One addition is allowed: a VALIDATION_ERROR may carry a
// details object the reference does not send (harness-edge names the invalid field there);
// `details` is an optional object of the reference's Problem, so no client is broken by it.
func expectProblem(r rawResponse, status int, want map[string]any) error {
	if r.Status != status {
		return fmt.Errorf("status %d, want %d (body %s)", r.Status, status, clip(r.Body))
	}
	var got map[string]any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		return fmt.Errorf("body is not a JSON Problem: %s", clip(r.Body))
	}
	if _, wantDetails := want["details"]; !wantDetails && got["code"] == "VALIDATION_ERROR" {
		if _, isObject := got["details"].(map[string]any); isObject {
			delete(got, "details")
		}
	}
	// Compare through JSON so numbers and slices have one representation.
	wantJSON, _ := json.Marshal(want)
	var wantNorm map[string]any
	_ = json.Unmarshal(wantJSON, &wantNorm)
	if !reflect.DeepEqual(got, wantNorm) {
		return fmt.Errorf("body %s, want %s", clip(r.Body), wantJSON)
	}
	return nil
}

// problem is the Problem body {code, message}.
func problem(code, message string) map[string]any {
	return map[string]any{"code": code, "message": message}
}

// clip shortens a body for a check's detail.
func clip(b []byte) string {
	const max = 300
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// sseMessage is one SSE message that carried data, with its framing.
type sseMessage struct {
	Type  string // the event: field
	ID    string // the id: field in force
	Event api.RuntimeEvent
}

// stream is an open SSE response.
type stream struct {
	resp   *http.Response
	status int
	header http.Header
}

// openStream opens the event stream of id after the cursor. A non-200 answer is returned as
// an error carrying the body.
func (c *rawClient) openStream(ctx context.Context, id string, after int64) (*stream, error) {
	path := "/v1/executions/" + escape(id) + "/events?after=" + strconv.FormatInt(after, 10)
	req, err := c.request(ctx, http.MethodGet, path, nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, clip(b))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: Content-Type %q, want text/event-stream", path, ct)
	}
	return &stream{resp: resp, status: resp.StatusCode, header: resp.Header}, nil
}

// messages yields each message that carries data, decoded; comments and retry-only messages
// are skipped. It ends at the end of the body (the server closed the stream) or on an error.
func (s *stream) messages(yield func(sseMessage, error) bool) {
	for ev, err := range sse.Read(s.resp.Body, &sse.ReadConfig{MaxEventSize: 4 << 20}) {
		if err != nil {
			yield(sseMessage{}, err)
			return
		}
		if ev.Data == "" {
			continue
		}
		m := sseMessage{Type: ev.Type, ID: ev.LastEventID}
		if err := json.Unmarshal([]byte(ev.Data), &m.Event); err != nil {
			yield(sseMessage{}, fmt.Errorf("undecodable SSE data %q: %w", clip([]byte(ev.Data)), err))
			return
		}
		if !yield(m, nil) {
			return
		}
	}
}

func (s *stream) Close() { s.resp.Body.Close() }

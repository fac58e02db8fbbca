package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

const erasureCaddyfile = "testdata/erasure.Caddyfile"

// erasureSecret signs the test receiver's notifications (24 bytes, base64).
const erasureSecret = "whsec_ZXJhc3VyZS10ZXN0LXNlY3JldC0yNC1ieXRlcw=="

// webhookInbox is a Standard Webhooks receiver on loopback: it verifies each notification and
// keeps its type and body.
type webhookInbox struct {
	mu       sync.Mutex
	received []api.WebhookPayload
	bodies   [][]byte
	arrived  chan struct{}
	bad      []string
}

func newWebhookInbox(t *testing.T) (*webhookInbox, string) {
	in := &webhookInbox{arrived: make(chan struct{}, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p, err := sdk.VerifyWebhook(erasureSecret, r.Header, body)
		in.mu.Lock()
		if err != nil {
			in.bad = append(in.bad, err.Error())
		} else {
			in.received = append(in.received, p)
			in.bodies = append(in.bodies, body)
		}
		in.mu.Unlock()
		in.arrived <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return in, srv.URL + "/hooks"
}

// await returns the body of the first notification of type typ, waiting for it (a minute at
// most: a hang guard).
func (in *webhookInbox) await(t *testing.T, typ string) []byte {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		in.mu.Lock()
		for i, p := range in.received {
			if string(p.Type) == typ {
				body := in.bodies[i]
				in.mu.Unlock()
				return body
			}
		}
		bad := in.bad
		in.mu.Unlock()
		select {
		case <-in.arrived:
		case <-deadline:
			t.Fatalf("no %s notification within a minute (refused: %v)", typ, bad)
		}
	}
}

// TestBinaryDeletesAConversation runs the binary on bbolt: a conversation with a running turn
// is refused (409 CONVERSATION_BUSY), deleted with cancel=true, and then nothing of it answers —
// the conversation, its executions, their events and artifacts, a start on it, a second
// delete, the listing. A reader of the tenant stream resuming from before its entries meets the
// conversation.deleted message in their place; the webhook receiver is told; and once the
// server stopped, no key or value of the bbolt file holds its executions' ids or its input.
func TestBinaryDeletesAConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary; run without -short")
	}
	bin := buildCaddy(t)
	inbox, hookURL := newWebhookInbox(t)
	env := append(instanceEnv(t), "HARNESS_WEBHOOK_URL="+hookURL, "HARNESS_WEBHOOK_SECRET="+erasureSecret)
	srv := startCaddyWith(t, bin, env, erasureCaddyfile)
	c := &client{t: t, base: srv.url}

	// A conversation that stays, run to its end first: the tenant stream's cursor after it is
	// where a reader stood before the deleted conversation had any entry.
	kept := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	keptRun := c.post("/v1/executions", map[string]any{"conversationId": kept, "providerId": "mock", "input": "keep this"}, http.StatusAccepted)["id"].(string)
	c.waitFor(keptRun, api.ExecutionStateSucceeded)
	before := decode(t, c.request(http.MethodGet, "/v1/events?after=0", nil, http.StatusOK))["nextCursor"].(string)

	const secretWords = "erase-these-exact-words"
	conv := c.post("/v1/conversations", map[string]any{"metadata": map[string]any{"topic": "private"}}, http.StatusCreated)["id"].(string)
	done := c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": secretWords}, http.StatusAccepted)["id"].(string)
	c.waitFor(done, api.ExecutionStateSucceeded)
	running := c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": secretWords + " again",
		"config": map[string]any{"delayMs": 60000}}, http.StatusAccepted)["id"].(string)
	c.waitFor(running, api.ExecutionStateRunning)

	busy := decode(t, c.request(http.MethodDelete, "/v1/conversations/"+conv, nil, http.StatusConflict))
	if busy["code"] != "CONVERSATION_BUSY" || !strings.Contains(jsonText(busy["details"]), running) {
		t.Fatalf("DELETE while running: %v, want CONVERSATION_BUSY naming %s", busy, running)
	}
	c.request(http.MethodDelete, "/v1/conversations/"+conv+"?cancel=maybe", nil, http.StatusBadRequest)
	c.get("/v1/conversations/" + conv) // still there

	deleted := decode(t, c.request(http.MethodDelete, "/v1/conversations/"+conv+"?cancel=true", nil, http.StatusOK))
	if deleted["conversationId"] != conv || deleted["executions"] != float64(2) || deleted["deletedAt"] == nil {
		t.Fatalf("DELETE ?cancel=true answered %v, want %s with 2 executions", deleted, conv)
	}

	for _, path := range []string{
		"/v1/conversations/" + conv,
		"/v1/conversations/" + conv + "/executions",
		"/v1/conversations/" + conv + "/events",
		"/v1/executions/" + done, "/v1/executions/" + running,
		"/v1/executions/" + done + "/events", "/v1/executions/" + done + "/artifacts",
	} {
		c.request(http.MethodGet, path, nil, http.StatusNotFound)
	}
	c.request(http.MethodDelete, "/v1/conversations/"+conv, nil, http.StatusNotFound)
	c.request(http.MethodPost, "/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": "hello?"}, http.StatusNotFound)
	if list := string(c.request(http.MethodGet, "/v1/conversations", nil, http.StatusOK)); strings.Contains(list, conv) || !strings.Contains(list, kept) {
		t.Fatalf("the listing after the delete: %s", list)
	}

	// The tenant stream from before: the marker stands where the conversation's entries were.
	page := decode(t, c.request(http.MethodGet, "/v1/events?after="+before, nil, http.StatusOK))
	events, deletions := page["events"].([]any), page["deletions"].([]any)
	if len(events) != 0 || len(deletions) != 1 || deletions[0].(map[string]any)["type"] != "conversation.deleted" || deletions[0].(map[string]any)["conversationId"] != conv {
		t.Fatalf("the tenant stream's page after %s: %v, want no event and the conversation.deleted marker in deletions", before, page)
	}
	frame := firstSSEFrame(t, srv.url+"/v1/events", before)
	if !strings.Contains(frame, "event: conversation.deleted\n") || !strings.Contains(frame, `"conversationId":"`+conv+`"`) || !strings.Contains(frame, `"executions":2`) {
		t.Fatalf("the first SSE frame resuming from %s:\n%s\nwant the conversation.deleted marker", before, frame)
	}

	note, err := sdk.WebhookConversationDeleted(inbox.await(t, "conversation.deleted"))
	if err != nil || note.ConversationID != conv || note.Executions != 2 {
		t.Fatalf("conversation.deleted notification %+v (%v)", note, err)
	}

	srv.stop(t)
	leftovers := scanBolt(t, filepath.Join(lookup(env, "HARNESS_DATA_DIR"), "harness.db"), done, running, secretWords)
	if len(leftovers) > 0 {
		t.Fatalf("the bbolt file still holds the deleted conversation:\n%s", strings.Join(leftovers, "\n"))
	}
}

// firstSSEFrame opens url as an event stream resuming after lastEventID and returns its first
// frame with an event line (a minute at most: a hang guard).
func firstSSEFrame(t *testing.T, url, lastEventID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastEventID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	chunk := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(chunk)
		buf.Write(chunk[:n])
		for _, frame := range strings.Split(buf.String(), "\n\n") {
			if strings.Contains(frame, "event: ") {
				return frame + "\n"
			}
		}
		if err != nil {
			t.Fatalf("the stream ended before an event (%v): %q", err, buf.String())
		}
	}
}

// scanBolt walks every bucket of the bbolt file (nested ones too) and reports each key or
// value that contains one of needles.
func scanBolt(t *testing.T, path string, needles ...string) []string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var found []string
	var walk func(trail string, b *bolt.Bucket)
	check := func(trail string, k, v []byte) {
		for _, n := range needles {
			if bytes.Contains(k, []byte(n)) || bytes.Contains(v, []byte(n)) {
				found = append(found, trail+": key "+string(k)+" holds "+n)
			}
		}
	}
	walk = func(trail string, b *bolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				if nested := b.Bucket(k); nested != nil {
					walk(trail+"/"+string(k), nested)
					return nil
				}
			}
			check(trail, k, v)
			return nil
		})
	}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			walk(string(name), b)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func jsonText(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

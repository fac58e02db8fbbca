package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// requestGuard keeps a request to a stopped node or a stalled database from holding a client
// for ever; the bounds the checker holds are the settings', well below it.
const requestGuard = 30 * time.Second

// caller sends the clients' requests and writes each to the history, answered or not.
type caller struct {
	j      *journal
	http   *http.Client
	counts *counter
}

func newCaller(j *journal, counts *counter) *caller {
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &caller{j: j, http: &http.Client{Transport: transport}, counts: counts}
}

// call is one request as the history records it.
type call struct {
	client, op, method, path, tenant, key string
	body                                  any // marshalled; nil: no body
	// executionID and conversationID name what the request acts on, when known.
	executionID, conversationID string
}

// do sends c to n and returns the status (0 when there was no answer) and the answer's body.
func (k *caller) do(ctx context.Context, n *node, c call) (int, []byte) {
	var body []byte
	if c.body != nil {
		body, _ = json.Marshal(c.body)
	}
	line := history.Request{Client: c.client, Node: n.name, Op: c.op, Method: c.method, Path: c.path,
		Tenant: c.tenant, IdempotencyKey: c.key, Body: body, ExecutionID: c.executionID,
		ConversationID: c.conversationID, Final: c.client == "final"}
	ctx, cancel := context.WithTimeout(ctx, requestGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, n.base+c.path, bytes.NewReader(body))
	if err != nil {
		panic(err) // a path the nemesis built wrong
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Tenant", c.tenant)
	line.Invoke = k.j.Now()
	resp, err := k.http.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			line.Status = resp.StatusCode
		}
	}
	line.Complete = k.j.Now()
	if err != nil {
		line.Error = err.Error()
		answer = nil
	}
	line.Answer = history.RawJSON(answer) // not JSON (a proxy's page): kept as text
	if werr := k.j.Request(line); werr != nil {
		k.counts.add("history write error", 1)
	}
	k.counts.add(fmt.Sprintf("request %s %d", c.op, line.Status), 1)
	return line.Status, answer
}

package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// requestGuard keeps a request to a stopped node or a stalled database from holding a client
// for ever; the bounds the checker holds are the settings', well below it.
const requestGuard = 30 * time.Second

// caller sends the clients' requests and writes each to the history, answered or not.
type caller struct {
	j      *journal
	http   *http.Client
	ids    atomic.Int64
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
}

// do sends c to n and returns the status (0 when there was no answer) and the answer's body.
func (k *caller) do(ctx context.Context, n *node, c call) (int, []byte) {
	var body []byte
	if c.body != nil {
		body, _ = json.Marshal(c.body)
	}
	line := requestLine{Kind: "request", ID: fmt.Sprintf("r%d", k.ids.Add(1)), Client: c.client, Node: n.name,
		Op: c.op, Method: c.method, Path: c.path, Tenant: c.tenant, IdempotencyKey: c.key, Body: body}
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
	invoke := time.Now()
	line.Invoke = stamp(invoke)
	resp, err := k.http.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			line.Status = resp.StatusCode
		}
	}
	done := time.Now()
	line.Complete, line.T = stamp(done), stamp(done)
	if err != nil {
		line.Error = err.Error()
		answer = nil
	} else if json.Valid(answer) {
		line.Answer = answer
	} else if len(answer) > 0 {
		line.Answer, _ = json.Marshal(string(answer)) // not JSON (a proxy's page): kept as text
	}
	k.j.write(line)
	k.counts.add(fmt.Sprintf("request %s %d", c.op, line.Status), 1)
	return line.Status, answer
}

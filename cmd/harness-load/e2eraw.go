package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// rawExecution is one e2e execution the portable way in raw HTTP, as a browser, a curl script
// or the hidden bench runs it (-e2e-start raw): POST /v1/executions asking for JSON, with no
// Idempotency-Key (the SDK's StartExecution sends one, which costs the server an idempotency
// record that such clients never ask for), then GET the event stream as SSE to its terminal
// event. The reader is the fan-out phase's (readSSE): no SDK decoding of every event.
func (l *load) rawExecution(ctx context.Context, conv string, loop *executionLoop, t0 time.Time) error {
	id, err := l.startRaw(ctx, conv, "hello runtime", 0)
	if err != nil {
		return err
	}
	loop.startLat.add(time.Since(t0))
	resp, err := openStream(ctx, l.hc, l.cfg.baseURL, id, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var last string
	err = readSSE(resp.Body, 4<<10, func(ev wireEvent) bool {
		if last == "" {
			loop.firstEvent.add(time.Since(t0))
		}
		loop.events.Add(1)
		last = ev.typ
		return true
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", id, err)
	}
	// Read to the end of the body so that the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, resp.Body)
	if last != string(api.StandardEventTypeRunCompleted) {
		return fmt.Errorf("execution %s ended with %q", id, last)
	}
	return nil
}

// startRaw POSTs a mock execution ({"delayMs": delayMs}) asking for JSON and returns its id
// from the answer (202; a server that answers a start 200 or 201 is taken at its word). The
// live phase's starts are this request with its own input and delay.
func (l *load) startRaw(ctx context.Context, conv, input string, delayMs int) (string, error) {
	body, err := json.Marshal(map[string]any{
		"conversationId": conv,
		"providerId":     l.cfg.provider,
		"input":          input,
		"config":         map[string]any{"delayMs": delayMs},
	})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.baseURL+"/v1/executions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := l.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("start: %s: %s", resp.Status, bytes.TrimSpace(raw))
	}
	var exec struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &exec); err != nil || exec.ID == "" {
		return "", fmt.Errorf("start: no execution id in %q", raw)
	}
	return exec.ID, nil
}

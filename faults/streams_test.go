package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Event streams opened during a fault (invariant 5): each is read until its terminal event,
// reconnecting with Last-Event-ID (at the next base in turn: the balancer, another node) when
// the stream breaks or ends without one, as an SSE client does.

// followed is what one follower saw.
type followed struct {
	id         string
	firstBase  string
	terminal   string // the terminal event's type; "" if none was seen within the bound
	sequences  []int64
	reconnects int
	lastErr    string
}

var streamClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// follow reads id's stream at bases[0], then bases[1], … in turn until a terminal event or ctx
// ends.
func follow(ctx context.Context, id string, bases []string) followed {
	f := followed{id: id, firstBase: bases[0]}
	var last int64
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			f.reconnects++
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
		done, err := followOnce(ctx, bases[attempt%len(bases)], id, &last, &f)
		if done {
			return f
		}
		if err != nil {
			f.lastErr = err.Error()
		}
	}
	return f
}

// followOnce reads one connection of the stream; done when the terminal event arrived.
func followOnce(ctx context.Context, base, id string, last *int64, f *followed) (done bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/executions/"+id+"/events", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*last, 10))
	}
	resp, err := streamClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: status %d", base, resp.StatusCode)
	}
	for msg, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 4 << 20}) {
		if err != nil {
			return false, fmt.Errorf("%s: %w", base, err)
		}
		var ev struct {
			Sequence int64  `json:"sequence"`
			Type     string `json:"type"`
		}
		if err := json.Unmarshal([]byte(msg.Data), &ev); err != nil {
			return false, fmt.Errorf("%s: event %q: %w", base, msg.Data, err)
		}
		f.sequences = append(f.sequences, ev.Sequence)
		*last = ev.Sequence
		if isTerminal(ev.Type) {
			f.terminal = ev.Type
			return true, nil
		}
	}
	return false, fmt.Errorf("%s: the stream ended without a terminal event", base)
}

func isTerminal(typ string) bool {
	switch api.StandardEventType(typ) {
	case api.StandardEventTypeRunCompleted, api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled:
		return true
	}
	return false
}

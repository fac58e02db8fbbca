package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Event streams opened during a fault (invariant 5), and streams held on a node when it is cut
// off from its database (invariant 8): each is read until its terminal event, reconnecting with
// Last-Event-ID (at the next base in turn: the balancer, another node) when the stream breaks or
// ends without one, as an SSE client does.

// followed is what one follower saw.
type followed struct {
	id         string
	firstBase  string
	terminal   string // the terminal event's type; "" if none was seen within the bound
	sequences  []int64
	reconnects int
	lastErr    string
	conns      []streamConn // every attempt, in order
}

// streamConn is one connection of a followed stream.
type streamConn struct {
	base   string
	opened time.Time // the response's headers arrived (zero: no answer)
	ended  time.Time // the connection ended, whichever way
	status int
	events int
	// clean: the body ended as a server ends a stream — EOF after a whole message (or after the
	// headers alone), no transport error.
	clean    bool
	terminal bool // the terminal event arrived on this connection
}

var streamClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// follow reads id's stream at bases[0], then bases[1], … in turn until a terminal event or ctx
// ends. opened, if not nil, is called once the first attempt has its answer's headers (or has
// failed).
func follow(ctx context.Context, id string, bases []string, opened func()) followed {
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
		done, err := followOnce(ctx, bases[attempt%len(bases)], id, &last, &f, opened)
		opened = nil
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
func followOnce(ctx context.Context, base, id string, last *int64, f *followed, opened func()) (done bool, err error) {
	f.conns = append(f.conns, streamConn{base: base})
	conn := &f.conns[len(f.conns)-1]
	defer func() {
		conn.ended = time.Now()
		if opened != nil {
			opened()
		}
	}()
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
	conn.opened, conn.status = time.Now(), resp.StatusCode
	if opened != nil {
		opened()
		opened = nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: status %d", base, resp.StatusCode)
	}
	body := &endWatcher{r: resp.Body}
	for msg, err := range sse.Read(body, &sse.ReadConfig{MaxEventSize: 4 << 20}) {
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
		conn.events++
		*last = ev.Sequence
		if isTerminal(ev.Type) {
			f.terminal, conn.terminal = ev.Type, true
			return true, nil
		}
	}
	// go-sse's Read ends quietly on EOF, even in the middle of a message: the body says how.
	conn.clean = body.err == io.EOF && (body.n == 0 || bytes.HasSuffix(body.tail, []byte("\n\n")))
	if body.err != io.EOF {
		return false, fmt.Errorf("%s: the stream broke: %v", base, body.err)
	}
	return false, fmt.Errorf("%s: the stream ended without a terminal event", base)
}

// endWatcher passes a response body through and remembers how it ended: the error that ended it
// (io.EOF: the server ended the body) and its last bytes.
type endWatcher struct {
	r    io.Reader
	n    int64
	tail []byte // the last two bytes read
	err  error
}

func (w *endWatcher) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.n += int64(n)
		w.tail = append(w.tail, p[:n]...)
		w.tail = w.tail[max(0, len(w.tail)-2):]
	}
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func isTerminal(typ string) bool {
	switch api.StandardEventType(typ) {
	case api.StandardEventTypeRunCompleted, api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled:
		return true
	}
	return false
}

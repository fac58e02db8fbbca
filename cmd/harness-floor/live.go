package main

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The live mode (issue 46): a start whose config has a delayMs > 0 is a live execution, as the
// mock runs it — run.queued (durable before the 202), run.started, then one delta per word of
// "Echo: "+input, delayMs apart, then output.text.done and run.completed. Each event is made
// durable by its own Put through the group commit (which gathers the events of all executions
// in flight, after the store's linger; the execution goes on producing meanwhile) and then written to every stream of the execution as it
// comes: nothing else. A stream writes whatever frames are ready when it wakes in one write.

// liveDelay is the start's delayMs when it asks for a live execution.
func liveDelay(req startBody) (time.Duration, bool) {
	ms, ok := req.Config["delayMs"].(float64)
	if !ok || ms <= 0 || ms > 60_000 {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// liveExecution is the frames of one live execution so far, appended as each becomes durable.
type liveExecution struct {
	mu      sync.Mutex
	frames  []byte        // append-only: bytes below len are never written again
	done    bool          // the terminal event is in frames
	changed chan struct{} // closed (and replaced) when frames grow
}

func (x *liveExecution) append(frame []byte, terminal bool) {
	x.mu.Lock()
	x.frames = append(x.frames, frame...)
	x.done = terminal
	close(x.changed)
	x.changed = make(chan struct{})
	x.mu.Unlock()
}

// since returns the frames after offset, whether the execution has ended, and a channel closed
// when more arrive.
func (x *liveExecution) since(offset int) (frames []byte, done bool, changed <-chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.frames[offset:], x.done, x.changed
}

// liveExecutions are the live executions by id; an ended one is dropped a while after its end.
type liveExecutions struct {
	mu   sync.Mutex
	byID map[string]*liveExecution
}

func (l *liveExecutions) add(id string) *liveExecution {
	x := &liveExecution{changed: make(chan struct{})}
	l.mu.Lock()
	if l.byID == nil {
		l.byID = make(map[string]*liveExecution)
	}
	l.byID[id] = x
	l.mu.Unlock()
	return x
}

func (l *liveExecutions) get(id string) (*liveExecution, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	x, ok := l.byID[id]
	return x, ok
}

// keepEnded is how long an ended live execution stays streamable from memory.
const keepEnded = 30 * time.Second

func (l *liveExecutions) ended(id string) {
	time.AfterFunc(keepEnded, func() {
		l.mu.Lock()
		delete(l.byID, id)
		l.mu.Unlock()
	})
}

// startLive stores the execution with its run.queued durably, answers the 202, and runs it.
func (h *handler) startLive(w http.ResponseWriter, req startBody, delay time.Duration) {
	id := h.newID("exec_")
	at := timestamp(time.Now())
	provider := `{"providerId":` + strconv.Quote(req.ProviderID) + `}`
	queued := appendFrame(nil, id, 1, "run.queued", provider, at)
	record := appendQueued(nil, id, at, req)
	if err := h.store.put([]byte(id), append(append(record, '\n'), queued...)); err != nil {
		http.Error(w, "commit: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	x := h.live.add(id)
	x.append(queued, false)
	go h.runLive(id, x, req, provider, delay)

	body := appendQueued(nil, id, at, req)
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(body)
}

// runLive emits the execution's events after run.queued, each streamed once durable; like the
// mock under harness-edge, it does not wait for an event's commit before producing the next.
func (h *handler) runLive(id string, x *liveExecution, req startBody, provider string, delay time.Duration) {
	defer h.live.ended(id)
	seq := 1
	var failed atomic.Bool // a put failed (the store closed): the streams were ended
	emit := func(typ, data string, terminal bool) {
		seq++
		frame := appendFrame(nil, id, seq, typ, data, timestamp(time.Now()))
		key := strconv.AppendInt(append([]byte(id), '/'), int64(seq), 10)
		h.store.putAsync(key, frame, func(err error) {
			switch {
			case failed.Load():
			case err != nil: // the store closed: end the streams
				failed.Store(true)
				x.append(nil, true)
			default:
				x.append(frame, terminal)
			}
		})
	}
	emit("run.started", provider, false)
	output := "Echo: " + req.Input
	for _, chunk := range append([]string{"Echo: "}, strings.SplitAfter(req.Input, " ")...) {
		time.Sleep(delay)
		emit("output.text.delta", `{"text":`+strconv.Quote(chunk)+`}`, false)
	}
	emit("output.text.done", `{"text":`+strconv.Quote(output)+`}`, false)
	emit("run.completed", `{"finalOutput":`+strconv.Quote(output)+`}`, true)
}

// streamLive writes the execution's frames to one stream as they become durable: the headers
// with the first frames, then whatever is ready at each wake-up in one write, to the end.
func streamLive(w http.ResponseWriter, x *liveExecution) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Harness-Heartbeat-Ms", "15000")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	offset := 0
	for {
		frames, done, changed := x.since(offset)
		if len(frames) > 0 {
			if _, err := w.Write(frames); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			offset += len(frames)
		}
		if done {
			return
		}
		<-changed
	}
}

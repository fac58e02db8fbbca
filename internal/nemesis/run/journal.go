package run

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"time"
)

// journal writes the history (docs/nemesis.md, "History format"): one JSON line per request,
// per event received, per fault's start and end, and per execution's final read. Lines are
// written as they happen, from every client at once.
type journal struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	err error
}

func openJournal(path string) (*journal, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	return &journal{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

func (j *journal) write(line any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.enc.Encode(line); err != nil && j.err == nil {
		j.err = err
	}
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.w.Flush(); err != nil && j.err == nil {
		j.err = err
	}
	if err := j.f.Close(); err != nil && j.err == nil {
		j.err = err
	}
	return j.err
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

type runLine struct {
	Kind     string   `json:"kind"`
	T        string   `json:"t"`
	Seed     uint64   `json:"seed"`
	Store    string   `json:"store"`
	Nodes    []string `json:"nodes"`
	Lease    string   `json:"lease"`
	Settings Settings `json:"settings"`
}

// requestLine is one request: sent at invoke, answered (or not: status 0 and error) at complete.
type requestLine struct {
	Kind           string          `json:"kind"`
	T              string          `json:"t"`
	ID             string          `json:"id"`
	Client         string          `json:"client"`
	Node           string          `json:"node"`
	Op             string          `json:"op"`
	Method         string          `json:"method"`
	Path           string          `json:"path"`
	Tenant         string          `json:"tenant"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	Body           json.RawMessage `json:"body,omitempty"`
	Invoke         string          `json:"invoke"`
	Complete       string          `json:"complete"`
	Status         int             `json:"status"`
	Error          string          `json:"error,omitempty"`
	Answer         json.RawMessage `json:"answer,omitempty"`
}

// eventLine is one event a stream delivered.
type eventLine struct {
	Kind         string          `json:"kind"`
	T            string          `json:"t"`
	Stream       string          `json:"stream"`
	Subscription string          `json:"subscription"`
	ResumedFrom  string          `json:"resumedFrom,omitempty"`
	Scope        string          `json:"scope"`
	Tenant       string          `json:"tenant"`
	Filtered     bool            `json:"filtered"`
	Node         string          `json:"node"`
	Cursor       string          `json:"cursor"`
	ExecutionID  string          `json:"executionId"`
	Sequence     int64           `json:"sequence"`
	Type         string          `json:"type"`
	Data         json.RawMessage `json:"data"`
}

type faultLine struct {
	Kind   string `json:"kind"`
	T      string `json:"t"`
	Fault  string `json:"fault"`
	Target string `json:"target"`
	Phase  string `json:"phase"`
	Error  string `json:"error,omitempty"`
}

type finalLine struct {
	Kind        string          `json:"kind"`
	T           string          `json:"t"`
	Node        string          `json:"node"`
	ExecutionID string          `json:"executionId"`
	State       string          `json:"state"`
	Status      int             `json:"status"`
	Snapshot    json.RawMessage `json:"snapshot,omitempty"`
}

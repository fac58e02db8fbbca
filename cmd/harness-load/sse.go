package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The fan-out and idle-stream phases read the SSE wire directly instead of through the SDK's
// Events iterator: the SDK de-duplicates and fills gaps by design, which would hide exactly what
// the exactly-once check is for, and a 200-subscriber phase on a 2-core machine would otherwise
// spend most of its CPU decoding every event into api.RuntimeEvent on the client side.

// wireEvent is one SSE message as sent: its id (the sequence), its type and its data.
type wireEvent struct {
	seq      int64
	typ      string
	data     []byte // valid only during the callback
	received time.Time
}

var errStopStream = errors.New("stream stopped by the reader")

// openStream opens GET /v1/executions/{id}/events with Accept: text/event-stream.
func openStream(ctx context.Context, hc *http.Client, base, executionID string, after int64) (*http.Response, error) {
	url := fmt.Sprintf("%s/v1/executions/%s/events?after=%d", base, executionID, after)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("stream %s: %s: %s", executionID, resp.Status, bytes.TrimSpace(body))
	}
	return resp, nil
}

// readSSE parses messages from r until EOF, an error, or fn returning false (errStopStream).
// Comments (heartbeats) and retry: fields are skipped. bufSize bounds the reader's buffer; a
// line longer than that is still read (bufio grows the line through ReadSlice's fallback).
func readSSE(r io.Reader, bufSize int, fn func(wireEvent) bool) error {
	return readSSEWithComments(r, bufSize, fn, nil)
}

// readSSEWithComments is readSSE that also calls onComment (when not nil) for each comment line
// (the server's heartbeats).
func readSSEWithComments(r io.Reader, bufSize int, fn func(wireEvent) bool, onComment func()) error {
	br := bufio.NewReaderSize(r, bufSize)
	var ev wireEvent
	var data []byte
	haveData := false
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(line) == 0 { // dispatch
			if haveData {
				ev.data = data
				ev.received = time.Now()
				if !fn(ev) {
					return errStopStream
				}
			}
			ev, data, haveData = wireEvent{}, data[:0], false
			continue
		}
		if line[0] == ':' {
			if onComment != nil {
				onComment()
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			ev.seq, _ = strconv.ParseInt(string(value), 10, 64)
		case "event":
			ev.typ = string(value)
		case "data":
			if haveData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			haveData = true
		}
	}
}

// readLine returns one line without its terminator; the slice is valid until the next call.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

var timeKey = []byte(`"time":"`)

// eventTime extracts the envelope's time from an event's wire JSON. The envelope's "time" is the
// last "time" key of the object (the data object comes first), so LastIndex finds it even
// when the data holds a "time" key of its own.
func eventTime(data []byte) (time.Time, bool) {
	// Only "type" follows "time": look in the tail first (the phases read millions of events,
	// on the cores the server runs on).
	tail := max(0, len(data)-160)
	i := bytes.LastIndex(data[tail:], timeKey)
	if i >= 0 {
		i += tail
	} else {
		i = bytes.LastIndex(data, timeKey)
	}
	if i < 0 || len(data) < i+len(timeKey)+24 {
		return time.Time{}, false
	}
	return parseEventTime(data[i+len(timeKey) : i+len(timeKey)+24])
}

// parseEventTime reads the events' time format, 2006-01-02T15:04:05.000Z, as time.Parse would,
// without its generality (a sixth of the load tool's CPU in the streams phase).
func parseEventTime(b []byte) (time.Time, bool) {
	if len(b) != 24 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	num := func(from, to int) (int, bool) {
		n := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	var v [7]int
	for i, span := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 23}} {
		n, ok := num(span[0], span[1])
		if !ok {
			return time.Time{}, false
		}
		v[i] = n
	}
	if v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > time.Date(v[0], time.Month(v[1])+1, 0, 0, 0, 0, 0, time.UTC).Day() || v[3] > 23 || v[4] > 59 || v[5] > 59 {
		return time.Time{}, false
	}
	return time.Date(v[0], time.Month(v[1]), v[2], v[3], v[4], v[5], v[6]*int(time.Millisecond), time.UTC), true
}

func isTerminalType(t string) bool { return api.StandardEventType(t).Terminal() }

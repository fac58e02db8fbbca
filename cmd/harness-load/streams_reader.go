package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"time"
)

// The streams phase's readers: what each of its (up to 1,200) subscribers does per event. They
// run on the same cores as the server, so they do little: the id's position (to check each is
// seen once and in order) and the envelope's time (for the lag), no JSON decoding.

// logSubscriber is one stream of the phase.
type logSubscriber struct {
	events, dups, outOfOrder int64
	lastPos                  int64
	lags                     lagSamples
	err                      error
}

// lagSample is one receipt: the log position of the entry and its lag (event time → receipt).
type lagSample struct {
	pos int64
	lag time.Duration
}

// lagSamples keeps a subscriber's receipts in chunks, appended without copying what came before:
// one growing slice per subscriber copied gigabytes in a run with 1,200 subscribers (the load
// tool's busiest work after reading, on the cores the server runs on).
type lagSamples struct{ chunks [][]lagSample }

func (s *lagSamples) add(pos int64, d time.Duration) {
	if n := len(s.chunks); n == 0 || len(s.chunks[n-1]) == cap(s.chunks[n-1]) {
		s.chunks = append(s.chunks, make([]lagSample, 0, 4096))
	}
	last := &s.chunks[len(s.chunks)-1]
	*last = append(*last, lagSample{pos, d})
}

// allLags is every receipt's lag, of every subscriber.
func allLags(subs []*logSubscriber) Summary {
	var lags []time.Duration
	for _, s := range subs {
		for _, chunk := range s.lags.chunks {
			for _, x := range chunk {
				lags = append(lags, x.lag)
			}
		}
	}
	return summarize(lags)
}

// firstReceiptAndSpread splits the lag by log position: first is the lag of each entry's
// earliest receipt among the subscribers (what the commit, the publication and one wake-up
// take), spread the time from its earliest to its latest receipt (what writing it to every
// subscriber, and every reader's turn on a core, take). The lag a subscriber sees is at most
// first + spread.
func firstReceiptAndSpread(subs []*logSubscriber) (first, spread Summary) {
	type span struct{ lo, hi time.Duration }
	byPos := make(map[int64]span)
	for _, s := range subs {
		for _, chunk := range s.lags.chunks {
			for _, x := range chunk {
				sp, ok := byPos[x.pos]
				if !ok {
					sp = span{x.lag, x.lag}
				}
				sp.lo, sp.hi = min(sp.lo, x.lag), max(sp.hi, x.lag)
				byPos[x.pos] = sp
			}
		}
	}
	firsts := make([]time.Duration, 0, len(byPos))
	spreads := make([]time.Duration, 0, len(byPos))
	for _, sp := range byPos {
		firsts = append(firsts, sp.lo)
		spreads = append(spreads, sp.hi-sp.lo)
	}
	return summarize(firsts), summarize(spreads)
}

// cursorPosition reads the position of a cursor (`<tag>-<position>`). Clients treat cursors as
// opaque; the load tool looks inside to check the order it was sent in.
func cursorPosition(id []byte) int64 {
	i := bytes.LastIndexByte(id, '-')
	var n int64
	for _, c := range id[i+1:] {
		n = n*10 + int64(c-'0')
	}
	return n
}

// readSSEWithIDs is readSSE that hands over each message's id as it is (a cursor, where
// readSSE parses ids as sequences).
func readSSEWithIDs(r io.Reader, fn func(id []byte, ev wireEvent) bool) error {
	br := bufio.NewReaderSize(r, 16<<10)
	var ev wireEvent
	var id, data []byte
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				ev.data, ev.received = data, time.Now()
				if !fn(id, ev) {
					return errStopStream
				}
			}
			ev, data = wireEvent{}, data[:0]
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "id":
				id = append(id[:0], value...)
			case "event":
				ev.typ = string(value)
			case "data":
				data = append(data, value...)
			}
		}
	}
}

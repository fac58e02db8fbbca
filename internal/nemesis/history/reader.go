package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Line is one line read back: its 1-based number in the file and exactly one
// of the typed records, by Kind.
type Line struct {
	No      int
	Kind    Kind
	Run     *Run
	Request *Request
	Event   *Event
	Fault   *Fault
	Final   *Final
}

// Reader reads a history line by line.
type Reader struct {
	r  *bufio.Reader
	no int
}

// NewReader reads lines from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 1<<16)}
}

// Next returns the next line, or io.EOF after the last. Blank lines are
// skipped (they carry nothing); a line that does not decode is an error that
// names its number.
func (rd *Reader) Next() (Line, error) {
	for {
		b, err := rd.r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			return Line{}, err
		}
		rd.no++
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if err != nil {
				return Line{}, err
			}
			continue
		}
		l, derr := decodeLine(b)
		if derr != nil {
			return Line{}, fmt.Errorf("history line %d: %w", rd.no, derr)
		}
		l.No = rd.no
		return l, nil
	}
}

func decodeLine(b []byte) (Line, error) {
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return Line{}, err
	}
	l := Line{Kind: h.Kind}
	var target any
	switch h.Kind {
	case KindRun:
		l.Run = new(Run)
		target = l.Run
	case KindRequest:
		l.Request = new(Request)
		target = l.Request
	case KindEvent:
		l.Event = new(Event)
		target = l.Event
	case KindFault:
		l.Fault = new(Fault)
		target = l.Fault
	case KindFinal:
		l.Final = new(Final)
		target = l.Final
	default:
		return Line{}, fmt.Errorf("unknown kind %q (want run, request, event, fault or final)", h.Kind)
	}
	if err := json.Unmarshal(b, target); err != nil {
		return Line{}, err
	}
	return l, nil
}

// ReadAll reads every line of r.
func ReadAll(r io.Reader) ([]Line, error) {
	rd := NewReader(r)
	var lines []Line
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, l)
	}
}

// ReadFile reads every line of the history at path.
func ReadFile(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f)
}

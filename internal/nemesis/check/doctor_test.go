package check

import (
	"encoding/json"
	"slices"
	"testing"
)

// The doctoring operations: each changes the clean scenario the way a bug
// would, keeping labels on their lines.

func (s *scenario) at(t *testing.T, label string) int {
	t.Helper()
	return s.line(t, label) - 1
}

// drop removes a line (an event lost).
func (s *scenario) drop(t *testing.T, label string) {
	i := s.at(t, label)
	s.entries = slices.Delete(s.entries, i, i+1)
}

// duplicate repeats a line right after itself, labelled label+"#2".
func (s *scenario) duplicate(t *testing.T, label string) {
	i := s.at(t, label)
	s.entries = slices.Insert(s.entries, i+1, entry{label + "#2", s.entries[i].text})
}

// moveAfter takes a line out and puts it after another.
func (s *scenario) moveAfter(t *testing.T, label, after string) {
	i := s.at(t, label)
	e := s.entries[i]
	s.entries = slices.Delete(s.entries, i, i+1)
	j := s.at(t, after)
	s.entries = slices.Insert(s.entries, j+1, e)
}

// insertAfter adds a new line (as JSON text) after a labelled one.
func (s *scenario) insertAfter(t *testing.T, after, label, text string) {
	j := s.at(t, after)
	s.entries = slices.Insert(s.entries, j+1, entry{label, text})
}

// copyAs inserts a copy of one line after another, edited, under a new label.
// A copied request gets an id of its own, as a Writer would give it.
func (s *scenario) copyAs(t *testing.T, from, after, label string, edit func(m map[string]any)) {
	t.Helper()
	s.insertAfter(t, after, label, s.entries[s.at(t, from)].text)
	s.edit(t, label, func(m map[string]any) {
		if m["kind"] == "request" {
			m["id"] = 1000 + len(s.entries)
		}
		edit(m)
	})
}

// edit changes fields of a line.
func (s *scenario) edit(t *testing.T, label string, f func(m map[string]any)) {
	t.Helper()
	i := s.at(t, label)
	var m map[string]any
	if err := json.Unmarshal([]byte(s.entries[i].text), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s.entries[i].text = string(b)
}

// raw parses JSON for an edit.
func raw(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// wantViolation asserts the report names the violation, on the execution
// given (if any), among whose lines are the ones given.
func wantViolation(t *testing.T, rep *Report, name, execID string, lines ...int) Violation {
	t.Helper()
	for _, v := range rep.Violations {
		if v.Name != name || (execID != "" && v.ExecutionID != execID) {
			continue
		}
		ok := true
		for _, l := range lines {
			ok = ok && slices.Contains(v.Lines, l)
		}
		if ok {
			return v
		}
	}
	t.Fatalf("want %s on %q with lines %v; got:\n%s", name, execID, lines, describe(rep))
	return Violation{}
}

func describe(rep *Report) string {
	out := ""
	for _, v := range rep.Violations {
		out += "  " + v.String() + "\n"
	}
	for _, n := range rep.Notes {
		out += "  note: " + n + "\n"
	}
	if out == "" {
		out = "  (nothing)\n"
	}
	return out
}

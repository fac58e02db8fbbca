package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func (s *scenario) file(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, e := range s.entries {
		b.WriteString(e.text + "\n")
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The command on a clean file: exit 0, the figures.
func TestMainCleanFile(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{cleanScenario(t).file(t)}, &out, &errOut)
	if code != ExitOK || !strings.Contains(out.String(), "no violations") || !strings.Contains(out.String(), "seed 7") ||
		!strings.Contains(out.String(), "faults: kill 1") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// On a doctored file: exit 1, each violation named with its lines, the seed
// and the replay command.
func TestMainNamesViolationsAndReplay(t *testing.T) {
	s := cleanScenario(t)
	s.drop(t, "x1.5")
	var out, errOut bytes.Buffer
	code := Main([]string{s.file(t)}, &out, &errOut)
	want := fmt.Sprintf("event-gap exec_1 (lines %d, %d): sequence 6 followed 4 on the execution stream (subscription s1): 5 missing", s.line(t, "x1.4"), s.line(t, "x1.6"))
	if code != ExitViolations || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "replay: harness-nemesis -seed 7") {
		t.Fatalf("exit %d, want a line %q and the replay command:\n%s%s", code, want, out.String(), errOut.String())
	}
}

// -json gives the report as a document.
func TestMainJSON(t *testing.T) {
	s := cleanScenario(t)
	s.duplicate(t, "c1.1.4")
	var out, errOut bytes.Buffer
	if code := Main([]string{"-json", s.file(t)}, &out, &errOut); code != ExitViolations {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Violations) != 1 || rep.Violations[0].Name != EventDuplicate {
		t.Fatalf("report %+v (%v)", rep, err)
	}
}

// Bad arguments and unreadable files: exit 2 with a message, never a panic.
func TestMainBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"kind":"run","t":"2026-12-03T14:00:00Z"}`+"\n"+`{"kind":"nonsense"}`+"\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: harness-nemesis check"},
		{[]string{"a", "b"}, "usage: harness-nemesis check"},
		{[]string{filepath.Join(t.TempDir(), "absent")}, "no such file"},
		{[]string{bad}, "line 2"},
		{[]string{"-false-takeovers", "maybe", bad}, "must be violation or count"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(c.args, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut.String(), c.want)
		}
	}
}

// -visualize writes porcupine's page of each execution not linearizable.
func TestMainVisualizesAStaleRead(t *testing.T) {
	s := cleanScenario(t)
	s.copyAs(t, "get2", "cancel2", "stale", func(m map[string]any) { m["invoke"], m["complete"] = at(7), at(7.1) })
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := Main([]string{"-visualize", dir, s.file(t)}, &out, &errOut); code != ExitViolations {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, "exec_1.html"))
	if err != nil || !bytes.Contains(page, []byte("<html")) {
		t.Fatalf("no visualization (%v):\n%s", err, out.String())
	}
}

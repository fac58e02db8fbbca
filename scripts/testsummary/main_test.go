package main

import (
	"strings"
	"testing"
)

// TestSummary feeds recorded `go test -json` lines: a passing and a skipped test in one package,
// a failing test in another. The summary names the skip's reason, prints the failing test's
// output and ends with "N passed, N failed" alone on the last line; summarize reports a failure.
func TestSummary(t *testing.T) {
	in := strings.Join([]string{
		`{"Time":"2026-12-01T10:00:00Z","Action":"start","Package":"example/a"}`,
		`{"Time":"2026-12-01T10:00:00Z","Action":"run","Package":"example/a","Test":"TestOK"}`,
		`{"Time":"2026-12-01T10:00:00Z","Action":"output","Package":"example/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"pass","Package":"example/a","Test":"TestOK"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"run","Package":"example/a","Test":"TestBrowser"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"output","Package":"example/a","Test":"TestBrowser","Output":"=== RUN   TestBrowser\n"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"output","Package":"example/a","Test":"TestBrowser","Output":"    console_test.go:37: chromium could not be started: install it\n"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"output","Package":"example/a","Test":"TestBrowser","Output":"--- SKIP: TestBrowser (0.00s)\n"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"skip","Package":"example/a","Test":"TestBrowser"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"output","Package":"example/a","Output":"PASS\n"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"output","Package":"example/a","Output":"ok  \texample/a\t1.0s\n"}`,
		`{"Time":"2026-12-01T10:00:01Z","Action":"pass","Package":"example/a"}`,
		`{"Time":"2026-12-01T10:00:02Z","Action":"run","Package":"example/b","Test":"TestBroken"}`,
		`{"Time":"2026-12-01T10:00:02Z","Action":"output","Package":"example/b","Test":"TestBroken","Output":"    b_test.go:9: got 1, want 2\n"}`,
		`{"Time":"2026-12-01T10:00:02Z","Action":"output","Package":"example/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}`,
		`{"Time":"2026-12-01T10:00:02Z","Action":"fail","Package":"example/b","Test":"TestBroken"}`,
		`{"Time":"2026-12-01T10:00:02Z","Action":"output","Package":"example/b","Output":"FAIL\texample/b\t0.1s\n"}`,
		`{"Time":"2026-12-01T10:00:02Z","Action":"fail","Package":"example/b"}`,
	}, "\n")
	var out strings.Builder
	failed, err := summarize(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("summarize: failed %v, err %v; want failed", failed, err)
	}
	got := out.String()
	for _, want := range []string{
		"ok  \texample/a\t1.0s\n",
		"b_test.go:9: got 1, want 2\n--- FAIL: TestBroken",
		"FAIL\texample/b\t0.1s\n",
		"  example/a TestBrowser: chromium could not be started: install it\n",
		"tests and subtests: 1 passed, 1 failed, 1 skipped in 2s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n"); lines[len(lines)-1] != "1 passed, 1 failed" {
		t.Errorf("last line %q, want \"1 passed, 1 failed\"", lines[len(lines)-1])
	}
	if strings.Contains(got, "=== RUN") {
		t.Errorf("the summary repeats the verbose run lines:\n%s", got)
	}

	// All passing: no failure reported.
	failed, _ = summarize(strings.NewReader(strings.Join(strings.Split(in, "\n")[:12], "\n")), &strings.Builder{})
	if failed {
		t.Error("a passing run was reported failed")
	}
}

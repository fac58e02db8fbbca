// Command testsummary reads `go test -json` on stdin and prints what plain `go test` prints (a
// line per package, "ok" or "FAIL", and the whole output of each failing test and build) and,
// at the end, a summary: how many tests passed, failed and were skipped, and why each skipped
// test skipped, so a reader can tell whether the browser and PostgreSQL tests ran. Its last line
// is "N passed, N failed" alone. It exits 1 when anything failed (a test, a build, a package).
//
//	go test -json ./... | go run ./scripts/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string // a package's fail caused by a build failure
}

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// skip is one skipped test and its reason (the t.Skip message).
type skip struct{ pkg, test, reason string }

// summarize copies the essentials of the events on in to out and reports whether anything failed.
func summarize(in io.Reader, out io.Writer) (failed bool, err error) {
	var (
		passed, failedTests int
		skips               []skip
		output              = map[string][]string{} // package + test → its output lines so far
		started             time.Time
		ended               time.Time
	)
	key := func(e event) string { return e.Package + "\x00" + e.Test }
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not an event: something go test printed itself (a vet or setup error).
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		if started.IsZero() && !e.Time.IsZero() {
			started = e.Time
		}
		if !e.Time.IsZero() {
			ended = e.Time
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test == "" {
				// Package lines: "ok  pkg 1.2s", "FAIL pkg", "?  pkg [no test files]", panics
				// outside tests. The "PASS"/"FAIL" lines the test binary prints alone are noise.
				if t := strings.TrimSpace(e.Output); t != "PASS" && t != "FAIL" && !strings.HasPrefix(t, "=== ") {
					fmt.Fprint(out, e.Output)
				}
				continue
			}
			output[key(e)] = append(output[key(e)], e.Output)
		case "pass":
			if e.Test != "" {
				passed++
				delete(output, key(e))
			}
		case "fail":
			failed = true
			if e.Test != "" {
				failedTests++
				fmt.Fprint(out, strings.Join(output[key(e)], ""))
				delete(output, key(e))
			}
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{e.Package, e.Test, skipReason(output[key(e)])})
				delete(output, key(e))
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return true, err
	}

	fmt.Fprintln(out)
	if len(skips) > 0 {
		sort.Slice(skips, func(i, j int) bool {
			return skips[i].pkg+skips[i].test < skips[j].pkg+skips[j].test
		})
		fmt.Fprintf(out, "skipped (%d):\n", len(skips))
		for _, s := range skips {
			fmt.Fprintf(out, "  %s %s: %s\n", s.pkg, s.test, s.reason)
		}
	}
	fmt.Fprintf(out, "tests and subtests: %d passed, %d failed, %d skipped in %s\n",
		passed, failedTests, len(skips), ended.Sub(started).Round(time.Second))
	if failed && failedTests == 0 {
		fmt.Fprintln(out, "a package failed outside its tests (a build failure, a panic, a timeout): see above")
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, failedTests)
	return failed, nil
}

// skipReason is the message of t.Skip among a skipped test's output: the lines after the
// "=== RUN" line, without the "--- SKIP" line, each "    file.go:12: " prefix removed.
func skipReason(lines []string) string {
	var reason []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if file, msg, ok := strings.Cut(t, ": "); ok && strings.Contains(file, ".go:") && !strings.Contains(file, " ") {
			t = msg
		}
		reason = append(reason, t)
	}
	if len(reason) == 0 {
		return "(no reason given)"
	}
	return strings.Join(reason, " ")
}

package check

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// Exit codes of `harness-nemesis check`.
const (
	ExitOK         = 0 // no violation
	ExitViolations = 1 // the history broke a promise
	ExitUsage      = 2 // bad arguments or an unreadable history
)

// Main is `harness-nemesis check [flags] FILE`: the checker alone on a
// recorded history. It prints the figures, each violation with its lines,
// the notes, and on failure the seed and the command that replays the
// schedule.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness-nemesis check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	takeovers := fs.String("false-takeovers", "", `"violation" or "count" (default: the run line's setting, else violation)`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("linearizability-timeout", 10*time.Second, "porcupine's bound per execution (past it: a note, not a verdict)")
	visualize := fs.String("visualize", "", "a directory for porcupine's HTML page of each execution that is not linearizable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: harness-nemesis check [flags] FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUsage
	}
	opt := Options{LinearizabilityTimeout: *timeout, VisualizeDir: *visualize}
	switch *takeovers {
	case "", "violation":
	case "count":
		opt.FalseTakeoversCounted = true
	default:
		fmt.Fprintf(stderr, "harness-nemesis check: -false-takeovers must be violation or count, not %q\n", *takeovers)
		return ExitUsage
	}
	path := fs.Arg(0)
	lines, err := history.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "harness-nemesis check: %s: %v\n", path, err)
		return ExitUsage
	}
	rep := Check(lines, opt)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "harness-nemesis check: %v\n", err)
			return ExitUsage
		}
	} else {
		Print(stdout, path, len(lines), rep)
	}
	if !rep.OK() {
		return ExitViolations
	}
	return ExitOK
}

// Print writes a report for people.
func Print(w io.Writer, path string, lines int, rep *Report) {
	fmt.Fprintf(w, "history %s: %d lines, seed %d, %d executions, %d events checked\n", path, lines, rep.Seed, rep.Executions, rep.Events)
	fmt.Fprintf(w, "requests: %s\n", counts(rep.Requests))
	fmt.Fprintf(w, "faults: %s\n", counts(rep.Faults))
	fmt.Fprintf(w, "linearizability: %d executions, %d operations (porcupine)\n", rep.Linearized, rep.Operations)
	fmt.Fprintf(w, "false takeovers: %d\n", rep.FalseTakeovers)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if rep.OK() {
		fmt.Fprintln(w, "no violations")
		return
	}
	fmt.Fprintf(w, "%d violations (%s):\n", len(rep.Violations), strings.Join(rep.Names(), ", "))
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	fmt.Fprintf(w, "seed %d", rep.Seed)
	if rep.Command != "" {
		fmt.Fprintf(w, "; replay: %s", rep.Command)
	}
	fmt.Fprintln(w)
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/harness-edge/harness-edge/conformance"
)

var conformanceCommand = command{
	name:    "conformance",
	args:    "",
	summary: "check a server with the portable conformance suite",
	help: `Runs the reference's 17 checks over its six scenarios (basic, approval, input, artifacts,
denial, cancellation) and its HTTP-level cases against the server, printing one line per
check (PASS, FAIL with what was seen, or SKIP with why) and a closing line "N passed,
M failed". Exits 0 when no check failed, 3 when one did, 1 when the suite could not run.

The scenarios use the mock provider's configs. Against another provider only what it can be
probed for portably runs (the basic scenario, cancellation if it supports execution.cancel,
the HTTP cases that need no approval); the rest is skipped, with the reason.

Every execution the suite starts is cancelled at the end if it has not finished.

Examples:
  harnessctl conformance
  harnessctl conformance --base https://harness.example.com --provider claude --timeout 2m
  harnessctl conformance --json | jq '.checks[] | select(.passed == false)'`,
	run: (*app).conformance,
}

func (a *app) conformance(g *globals, cmd command, args []string) int {
	fs := g.flagSet(a, "conformance")
	provider := fs.String("provider", conformance.DefaultProviderID, "provider `id` to probe")
	timeout := fs.Duration("timeout", conformance.DefaultTimeout, "bound on each scenario and each HTTP case")
	if code, ok := a.parse(fs, cmd, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return a.usageError("conformance takes no arguments")
	}
	opts := conformance.Options{BaseURL: a.baseURL(g), ProviderID: *provider, Timeout: *timeout}
	if token := a.getenv("HARNESS_TOKEN"); token != "" {
		opts.Header = http.Header{"Authorization": {"Bearer " + token}}
	}
	if !g.json {
		opts.OnCheck = func(c conformance.Check) { fmt.Fprintln(a.stdout, c) }
	}
	// Ctrl-C ends the run early; the suite still cancels the executions it started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	report, err := conformance.Run(ctx, opts)
	if err != nil {
		return a.fail(err)
	}
	if g.json {
		printJSON(a.stdout, jsonReport(report))
	} else {
		fmt.Fprintln(a.stdout, report.Summary())
	}
	fmt.Fprintf(a.stderr, "harnessctl: conformance of %s (provider %s) in %s\n", report.BaseURL, report.ProviderID, time.Since(start).Round(time.Millisecond))
	if !report.Passed() {
		return exitFailed
	}
	return exitOK
}

// jsonReport is the report as --json prints it.
func jsonReport(r conformance.Report) any {
	type check struct {
		Name    string `json:"name"`
		Passed  bool   `json:"passed"`
		Skipped bool   `json:"skipped,omitempty"`
		Detail  string `json:"detail,omitempty"`
	}
	checks := make([]check, len(r.Checks))
	for i, c := range r.Checks {
		checks[i] = check{c.Name, c.Passed, c.Skipped, c.Detail}
	}
	return map[string]any{
		"baseUrl": r.BaseURL, "providerId": r.ProviderID, "passed": r.Passed(),
		"summary": r.Summary(), "checks": checks,
	}
}

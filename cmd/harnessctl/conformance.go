package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/conformance"
)

func newConformanceCommand(a *app, g *globals) *cobra.Command {
	var provider string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "check a server with the portable conformance suite",
		Long: `Runs the reference's 17 checks over its six scenarios (basic, approval, input, artifacts,
denial, cancellation) and its HTTP-level cases against the server, printing one line per
check (PASS, FAIL with what was seen, or SKIP with why) and a closing line "N passed,
M failed". Exits 0 when no check failed, 3 when one did, 1 when the suite could not run.

The scenarios use the mock provider's configs. Against another provider only what it can be
probed for portably runs (the basic scenario, cancellation if it supports execution.cancel,
the HTTP cases that need no approval); the rest is skipped, with the reason.

Every execution the suite starts is cancelled at the end if it has not finished.`,
		Example: `  harnessctl conformance
  harnessctl conformance --base https://harness.example.com --provider claude --timeout 2m
  harnessctl conformance --json | jq '.checks[] | select(.passed == false)'`,
	}
	cmd.Flags().StringVar(&provider, "provider", conformance.DefaultProviderID, "provider `id` to probe")
	cmd.Flags().DurationVar(&timeout, "timeout", conformance.DefaultTimeout, "bound on each scenario and each HTTP case")
	_ = cmd.RegisterFlagCompletionFunc("provider", a.completeProviders(g))
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 0 {
			return a.usageError(cmd, "conformance takes no arguments")
		}
		hc, err := a.httpClient(g)
		if err != nil {
			return a.fail(err)
		}
		a.currentBase = a.baseURL(g)
		opts := conformance.Options{BaseURL: a.currentBase, ProviderID: provider, Timeout: timeout, HTTPClient: hc}
		auth, err := a.credentials(g)
		if err != nil {
			return a.fail(err)
		}
		if auth != "" {
			opts.Header = http.Header{"Authorization": {auth}}
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
	})
	return cmd
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

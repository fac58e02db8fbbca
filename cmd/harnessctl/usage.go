package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// usage reads GET /v1/usage (a harness-edge extension, docs/usage.md): what the caller's
// tenant's executions consumed.
func newUsageCommand(a *app, g *globals) *cobra.Command {
	var (
		from, to, by string
		since        time.Duration
		limit        int
	)
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "what your executions consumed: tokens and cost, in total or by provider, conversation or day",
		Long: `Sums the usage of your tenant's executions created in a time range (by default today, UTC,
so far), as the server stores it: tokens by kind and cost per currency. --by groups the sums by
provider, conversation or day (providers and conversations most expensive first). --since 24h
or --from/--to (RFC 3339) choose the range. With --json, prints the server's answer.

Usage is a harness-edge extension: against a server without it, usage reports the server's answer.`,
		Example: `  harnessctl usage
  harnessctl usage --by day --since 720h
  harnessctl usage --by conversation --limit 10
  harnessctl usage --from 2026-12-01T00:00:00Z --to 2026-12-02T00:00:00Z --json`,
		Args: cobra.NoArgs,
	}
	flags := cmd.Flags()
	flags.StringVar(&by, "by", "", "group by provider, conversation or day")
	flags.DurationVar(&since, "since", 0, "the range ends now and starts this long ago (e.g. 24h, 720h)")
	flags.StringVar(&from, "from", "", "start of the range, RFC 3339 (default: today 00:00 UTC)")
	flags.StringVar(&to, "to", "", "end of the range, RFC 3339 (default: now)")
	flags.IntVar(&limit, "limit", 0, "most groups shown (the server allows 1 to 1000; default 100)")

	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		params := &api.GetUsageParams{}
		switch by {
		case "":
		case "provider", "conversation", "day":
			g := api.GetUsageParamsGroupBy(by)
			params.GroupBy = &g
		default:
			return a.usageError(cmd, fmt.Sprintf("usage: --by must be provider, conversation or day, not %q", by))
		}
		if since > 0 {
			if from != "" {
				return a.usageError(cmd, "usage: give --since or --from, not both")
			}
			from = time.Now().Add(-since).UTC().Format(time.RFC3339)
		}
		if from != "" {
			params.From = &from
		}
		if to != "" {
			params.To = &to
		}
		if limit != 0 {
			params.Limit = &limit
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		report, err := c.Usage(context.Background(), params)
		if err != nil {
			return a.fail(err)
		}
		if g.json {
			printJSON(a.stdout, report)
			return exitOK
		}
		fmt.Fprintf(a.stdout, "from %s to %s\n", report.From, report.To)
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		key := "TOTAL"
		if report.GroupBy != nil {
			key = strings.ToUpper(string(*report.GroupBy))
		}
		fmt.Fprintf(tw, "%s\tEXECUTIONS\tINPUT\tOUTPUT\tCACHED\tTHOUGHT\tTOTAL TOKENS\tCOST\n", key)
		row := func(name string, t api.UsageTotals) {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", name, t.Executions, t.InputTokens, t.OutputTokens,
				t.CachedReadTokens+t.CachedWriteTokens, t.ThoughtTokens, t.TotalTokens, costs(t.Costs))
		}
		for _, grp := range report.Groups {
			row(grp.Key, grp.Total)
		}
		if report.GroupBy != nil {
			row("(all)", report.Total)
		} else {
			row("total", report.Total)
		}
		_ = tw.Flush()
		return exitOK
	})
	return cmd
}

// costs writes costs as "0.0123 USD, 1.5 EUR", or "-" when there are none.
func costs(cs []api.Cost) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Amount + " " + c.Currency
	}
	return strings.Join(parts, ", ")
}

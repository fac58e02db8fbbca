package sdk

import (
	"context"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Usage sums what the caller's tenant's executions consumed (GET /v1/usage, an extension of
// harness-edge; docs/usage.md): executions created in [params.From, params.To) — RFC 3339
// timestamps, by default today (UTC) so far — grouped by provider, conversation or day when
// params.GroupBy says so. Token counts are exact; costs are decimal strings per currency.
func (c *Client) Usage(ctx context.Context, params *api.GetUsageParams) (api.UsageReport, error) {
	resp, err := c.api.GetUsageWithResponse(ctx, params)
	if err != nil {
		return api.UsageReport{}, transportError("getUsage", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

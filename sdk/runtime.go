package sdk

import (
	"context"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Health checks that the server is up (GET /healthz). It returns nil when the server answers
// {"status":"ok"}. Like every read it is retried after connection errors, cut or silent
// answers, 408, 429 and 5xx, within ctx: bound ctx for a quick probe.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.api.HealthWithResponse(ctx)
	if err != nil {
		return transportError("health", err)
	}
	status, err := result(resp.HTTPResponse, resp.Body, resp.JSON200)
	if err != nil {
		return err
	}
	if status.Status != api.Health200JSONResponseBodyStatusOk {
		return fmt.Errorf("harness: health: server reports status %q", status.Status)
	}
	return nil
}

// DescribeRuntime returns the runtime's name, version, protocol version and the manifests of
// its providers in registration order (GET /v1/runtime). It is retried like GetExecution.
func (c *Client) DescribeRuntime(ctx context.Context) (api.RuntimeDescription, error) {
	resp, err := c.api.DescribeRuntimeWithResponse(ctx)
	if err != nil {
		return api.RuntimeDescription{}, transportError("describeRuntime", err)
	}
	return result(resp.HTTPResponse, resp.Body, resp.JSON200)
}

// ListCapabilities returns the providers' manifests (GET /v1/runtime/capabilities), to decide
// before starting whether a provider's support level for a capability is good enough. It is
// retried like GetExecution.
func (c *Client) ListCapabilities(ctx context.Context) ([]api.ProviderManifest, error) {
	resp, err := c.api.ListCapabilitiesWithResponse(ctx)
	if err != nil {
		return nil, transportError("listCapabilities", err)
	}
	list, err := result(resp.HTTPResponse, resp.Body, resp.JSON200)
	return list.Providers, err
}

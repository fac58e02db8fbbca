package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The HTTP cases of starting an execution: an unknown provider, an unsupported capability, an
// idempotency key reused with the same request and with another.

func (c *cases) providerNotFound(ctx context.Context) error {
	conv, err := c.conversation(ctx)
	if err != nil {
		return err
	}
	r, _, err := c.start(ctx, map[string]any{"conversationId": conv, "providerId": missingProvider, "input": "x"})
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusNotFound, problem("PROVIDER_NOT_FOUND", "Provider not found: "+missingProvider))
}

func (c *cases) capabilityUnsupported(ctx context.Context) error {
	capability := "extension.sandbox"
	if level, ok := c.manifest.Capabilities[capability]; ok && level != api.SupportLevelUnsupported {
		capability = "conformance.undeclared-capability" // this provider does sandbox; probe a name nobody declares
	}
	conv, err := c.conversation(ctx)
	if err != nil {
		return err
	}
	r, _, err := c.start(ctx, map[string]any{"conversationId": conv, "providerId": c.s.opts.ProviderID, "input": "x",
		"requiredCapabilities": []string{capability}})
	if err != nil {
		return err
	}
	want := problem("CAPABILITY_UNSUPPORTED", "Provider "+c.s.opts.ProviderID+" does not support required capabilities")
	want["details"] = map[string]any{"providerId": c.s.opts.ProviderID, "capabilities": []string{capability}}
	return expectProblem(r, http.StatusUnprocessableEntity, want)
}

func (c *cases) idempotencyReuse(ctx context.Context) error {
	conv, err := c.conversation(ctx)
	if err != nil {
		return err
	}
	c.idemRequest = map[string]any{"conversationId": conv, "providerId": c.s.opts.ProviderID,
		"input": c.s.opts.Input, "idempotencyKey": "conformance-http-idempotency"}
	r, first, err := c.start(ctx, c.idemRequest)
	if err != nil {
		return err
	}
	if r.Status != http.StatusAccepted {
		return fmt.Errorf("first start: status %d, want 202: %s", r.Status, clip(r.Body))
	}
	r, again, err := c.start(ctx, c.idemRequest)
	if err != nil {
		return err
	}
	if r.Status != http.StatusAccepted {
		return fmt.Errorf("repeated start: status %d, want 202: %s", r.Status, clip(r.Body))
	}
	if again.ID != first.ID {
		return fmt.Errorf("repeated start with the same key answered execution %s, want %s", again.ID, first.ID)
	}
	return nil
}

func (c *cases) idempotencyConflict(ctx context.Context) error {
	if c.idemRequest == nil {
		return errors.New("not run: http/idempotency-reuse could not start an execution")
	}
	conflicting := map[string]any{}
	for k, v := range c.idemRequest {
		conflicting[k] = v
	}
	conflicting["input"] = c.s.opts.Input + " (conflicting request)"
	r, _, err := c.start(ctx, conflicting)
	if err != nil {
		return err
	}
	return expectProblem(r, http.StatusConflict, problem("IDEMPOTENCY_CONFLICT", "Idempotency key was already used with a different execution request"))
}

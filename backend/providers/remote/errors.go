package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk"
)

// upstreamMessage is the local message for a failed upstream call. Only the upstream's own
// Problem message (or, for a body that is not a Problem, its HTTP status) is quoted: never the
// body itself, a transport error's text (it names internal addresses) or a header.
func (p *Provider) upstreamMessage(operation string, err error) string {
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr):
		return fmt.Sprintf("Upstream %s refused to %s: %s", p.up.s.label, operation, apiErr.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("Upstream %s did not answer the %s request in time", p.up.s.label, operation)
	default:
		return fmt.Sprintf("Upstream %s is unreachable (%s)", p.up.s.label, operation)
	}
}

package a2a

import (
	"context"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// refusals are the A2A errors an agent answers with: what it decided, not a lost connection.
var refusals = []error{
	a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrUnsupportedOperation,
	a2a.ErrUnsupportedContentType, a2a.ErrInvalidParams, a2a.ErrInvalidRequest,
	a2a.ErrMethodNotFound, a2a.ErrInternalError, a2a.ErrInvalidAgentResponse,
	a2a.ErrParseError, a2a.ErrServerError, a2a.ErrPushNotificationNotSupported,
	a2a.ErrVersionNotSupported, a2a.ErrExtensionSupportRequired, a2a.ErrUnauthenticated,
	a2a.ErrUnauthorized,
}

func isRefusal(err error) bool {
	for _, known := range refusals {
		if errors.Is(err, known) {
			return true
		}
	}
	return false
}

// message is the local message for a failed call to the agent. Only A2A's own error kinds are
// named: never a transport error's text (it names internal addresses), a body or a header.
func (a *Agent) message(operation string, err error) string {
	for _, known := range refusals {
		if errors.Is(err, known) {
			return fmt.Sprintf("A2A agent %s refused to %s: %s", a.s.label, operation, known)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("A2A agent %s did not answer the %s request in time", a.s.label, operation)
	}
	return fmt.Sprintf("A2A agent %s is unreachable (%s)", a.s.label, operation)
}

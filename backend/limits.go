package backend

import (
	"fmt"
)

// Per-execution limits bound what one request can add to the store: a provider that emits
// without end (the mock echoing a 1 MiB input word by word emits half a million events) fails
// its execution instead of filling the disk. They count every event of the execution, as
// stored (the wire JSON); only provider emissions are refused, so the lifecycle events that
// end an execution always fit.

// eventLimitExceeded is submit's refusal of a provider change that would take the execution
// past a limit; refuseOverLimit turns it into the execution's failure.
type eventLimitExceeded struct{ message string }

func (e *eventLimitExceeded) Error() string { return e.message }

const (
	msgTooManyEvents     = "Execution exceeded the limit of %d events"
	msgTooManyEventBytes = "Execution exceeded the limit of %d bytes of events"
)

// checkEventLimits refuses a provider change after which the execution would hold more than
// the allowed events (lastSeq is its last sequence after the change) or event bytes.
func (o Options) checkEventLimits(lastSeq, totalBytes int64) error {
	if limit := int64(o.MaxEventsPerExecution); lastSeq > limit {
		return &eventLimitExceeded{fmt.Sprintf(msgTooManyEvents, limit)}
	}
	if limit := o.MaxEventBytesPerExecution; totalBytes > limit {
		return &eventLimitExceeded{fmt.Sprintf(msgTooManyEventBytes, limit)}
	}
	return nil
}

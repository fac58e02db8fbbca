package backend

import (
	"github.com/harness-edge/harness-edge/backend/internal/hotwindow"

	"go.opentelemetry.io/otel/trace"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// defaultHotWindow bounds the recent events a live execution keeps in memory for its
// subscribers; older ones are read back from the store (they were committed before they were
// ever visible).
const defaultHotWindow = 4096

// execution is the in-memory state of a live execution, in parts by concern, each with its
// own guard (see the package comment for the roles of writeMu and mu):
//   - what never changes, below: its identity, its provider and configuration;
//   - runControl: the provider's context, the settling of its start, its cancellation;
//   - eventWriter (writeMu): the record and log as of the last submitted change;
//   - pendingActions (writeMu): the action its provider waits on;
//   - publishedView (mu): the record and log as committed, what readers see;
//   - executionSpan: its trace (tracing.go).
//
// The parts are embedded, so their fields and methods read as the execution's own.
type execution struct {
	rt *Runtime // the runtime it runs in
	// What the record says of the execution and never changes: read from here, without a
	// lock, instead of from either view of the record.
	id             string
	tenantID       string
	conversationID string
	input          string
	providerID     string
	config         api.JSONObject // effectiveConfig; immutable, copied for the provider
	provider       Provider       // the instance it started with, whatever SetProviders does later
	// resumedCheckpoint is the provider checkpoint found in the store when a restart resumed
	// the execution (resume.go); nil for an execution started by this process.
	resumedCheckpoint []byte

	runControl
	executionSpan
	eventWriter
	pendingActions
	artifactIDs map[string]struct{} // writeMu held
	usage       usageState          // what its usage reports did (usagereports.go)
	publishedView
}

func newExecution(r *Runtime, rec store.Execution, p Provider) *execution {
	e := rec.Execution
	var lease int64
	if r.cluster != nil {
		lease = r.cluster.Epoch()
	}
	return &execution{
		rt:             r,
		id:             e.ID,
		tenantID:       rec.Tenant,
		conversationID: e.ConversationID,
		input:          e.Input,
		providerID:     e.ProviderID,
		config:         e.EffectiveConfig,
		provider:       p,
		runControl:     newRunControl(r.baseCtx),
		eventWriter:    newEventWriter(rec, lease),
		artifactIDs:    make(map[string]struct{}),
		publishedView:  newPublishedView(rec, hotwindow.New(r.hotWindow, 0)),
	}
}

// attachSpan makes span (nil: none) the execution's (tracing.go): its events are recorded on
// it, and the provider's context carries it. Called before the execution's first change is
// submitted and before its goroutine starts.
func (x *execution) attachSpan(span trace.Span) {
	if span == nil {
		return
	}
	x.span = span
	x.runCtx = trace.ContextWithSpan(x.runCtx, span)
}

// actionRecord is the stored form of req with where it comes from (the inbox lists by it).
func (x *execution) actionRecord(req api.ActionRequest, status store.ActionStatus) store.Action {
	return store.Action{Request: req, Status: status, Tenant: x.tenantID, ConversationID: x.conversationID, ProviderID: x.providerID}
}

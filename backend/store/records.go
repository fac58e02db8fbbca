package store

import "github.com/harness-edge/harness-edge/sdk/api"

// The records below are what a store keeps. Their JSON form is the stored form of both
// stores (docs/storage.md): a field is renamed only with a migration of the stored format.

// Conversation is the durable form of a conversation: the wire object's fields and, beside
// them, the tenant that created it (absent in records written before tenancy: the anonymous
// tenant, "").
type Conversation struct {
	api.Conversation
	Tenant string `json:"tenant,omitempty"`
}

// Execution is the durable form of an execution: the wire object plus what the runtime needs
// to find the things that belong to it.
type Execution struct {
	Execution      api.Execution `json:"execution"`
	IdempotencyKey *string       `json:"idempotencyKey,omitempty"`
	ActionIDs      []string      `json:"actionIds,omitempty"`
	// PendingActionID is the action awaiting a response, "" when none.
	PendingActionID string `json:"pendingActionId,omitempty"`
	// Tenant owns the execution: the tenant of its conversation ("" = anonymous).
	Tenant string `json:"tenant,omitempty"`
	// Owner is the node that runs the execution, set only on stores shared by several nodes
	// (Cluster); "" on a single-node store, where the one process is the owner.
	Owner string `json:"owner,omitempty"`
	// BusyPolicy is the policy the execution was started under when it is not parallel
	// (reject, enqueue, interrupt; absent otherwise): a restart or a takeover finds in it that
	// a queued execution waits for its turn (Execution.WaitingFor) rather than having been
	// left unfinished, and whether it interrupts what it waits for.
	BusyPolicy string `json:"busyPolicy,omitempty"`
	// TraceParent is the W3C traceparent of the execution's span when it was traced (absent
	// otherwise): what joins a resumed execution and its webhook deliveries to its trace.
	TraceParent string `json:"traceParent,omitempty"`
	// ActionTimeoutMs is the start's actionTimeoutSeconds, in milliseconds (absent: the
	// provider's default): how long each of its actions may wait before it expires.
	ActionTimeoutMs int64 `json:"actionTimeoutMs,omitempty"`
}

// ActionStatus is where an action stands. Only resolved actions answer
// ACTION_ALREADY_RESOLVED; abandoned ones (the execution was cancelled, failed or the runtime
// restarted) answer ACTION_NOT_FOUND, like unknown ids (docs/protocol.md §7.2).
type ActionStatus string

const (
	ActionPending   ActionStatus = "pending"
	ActionResolved  ActionStatus = "resolved"
	ActionAbandoned ActionStatus = "abandoned"
)

// Action is an action request and where it stands, with where it comes from (the inbox
// lists and filters by these; absent in records written before it: approvals.go).
type Action struct {
	Request        api.ActionRequest `json:"request"`
	Status         ActionStatus      `json:"status"`
	Tenant         string            `json:"tenant,omitempty"`
	ConversationID string            `json:"conversationId,omitempty"`
	ProviderID     string            `json:"providerId,omitempty"`
}

// Idempotency binds (Tenant, ConversationID, Key) to the first execution started with it and
// the fingerprint of that request (docs/protocol.md §6). A store holds at most one per
// (tenant, conversation, key): committing a second one fails with ErrConflict.
type Idempotency struct {
	ConversationID string `json:"conversationId"`
	Key            string `json:"key"`
	Fingerprint    string `json:"fingerprint"`
	ExecutionID    string `json:"executionId"`
	Tenant         string `json:"tenant,omitempty"`
}

// StoredEvent is an event with the execution it belongs to, as a Batch carries it.
type StoredEvent struct {
	ExecutionID string
	Event       Event
	// Scope is what the conversation and tenant streams select the event by (streamlog.go);
	// nil: the store logs it with an empty scope (the anonymous tenant, no conversation).
	Scope *StreamScope
}

// Artifact is an artifact with its position in the execution's creation order (Artifacts
// returns them in that order).
type Artifact struct {
	Index    int
	Artifact api.Artifact
}

// Checkpoint is an execution's provider checkpoint: opaque bytes, committed atomically with
// the events it accounts for (a put replaces the previous one).
type Checkpoint struct {
	ExecutionID string
	Data        []byte
}

// ProviderState is one provider key/value; Key is the provider id, 0x00, the provider's key.
// It outlives executions: retention removes it only when it forgets a conversation the key
// belongs to (Batch.ProviderStateDeletions).
type ProviderState struct {
	Key   string
	Value []byte
}

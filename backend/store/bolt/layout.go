package bolt

// The layout of the bbolt file, format version 3 (formats 1 and 2 and their one-time rewrite on open:
// migrate.go). Bucket names are those of the PostgreSQL store's tables, values are named in the
// comments. Execution ids have a fixed length and are time-ordered (the runtime's
// newExecutionID), so "execution id + big-endian number" keys sort by execution and then
// numerically, a prefix scan finds one execution's events or artifacts in order, and the keys
// of new executions land at the right edge of every tree they are in: a commit dirties the
// same few pages there instead of one random page per execution. The two kinds of key that are
// not time-ordered (an idempotency key under its conversation, an execution under its
// conversation) go through the index journal first (journal.go).
var (
	bucketMeta          = []byte("meta")           // metaFormat → the format version, decimal
	bucketConversations = []byte("conversations")  // conversation id → store.Conversation JSON
	bucketExecutions    = []byte("executions")     // execution id → store.Execution JSON
	bucketEvents        = []byte("events")         // execution id + uint64 BE sequence → event value (eventvalue.go)
	bucketArtifacts     = []byte("artifacts")      // execution id + uint64 BE index → api.Artifact JSON
	bucketActions       = []byte("actions")        // action id → store.Action JSON
	bucketIdempotency   = []byte("idempotency")    // idempotencyKey(tenant, conversation, key) → store.Idempotency JSON
	bucketCheckpoints   = []byte("checkpoints")    // execution id → the provider's checkpoint (opaque bytes)
	bucketProviderState = []byte("provider_state") // provider id + 0x00 + key → opaque bytes
	bucketOutbox        = []byte("webhook_outbox") // pending notifications (outbox.go)
	bucketOutboxFailed  = []byte("webhook_failed") // notifications recorded as failed, kept until retention

	// The listing's two indexes. Keys are in creation order — big-endian milliseconds, then the
	// execution id — and a listing walks them backwards, newest first. executions_by_time's
	// value is the execution's state (rewritten with the record), so a state filter reads only
	// the index and decodes just the records it returns; executions_by_conversation's value is
	// empty (written once, when the execution is created: its state is read from
	// executions_by_time).
	bucketExecutionsByTime         = []byte("executions_by_time")         // ms + execution id → state
	bucketExecutionsByConversation = []byte("executions_by_conversation") // conversation id + 0x00 + ms + execution id → empty

	// bucketIndexJournal holds the entries of idempotency and executions_by_conversation
	// written since they were last folded into those buckets (journal.go).
	bucketIndexJournal = []byte("index_journal") // uint64 BE number → journal entry

	allBuckets = [][]byte{bucketMeta, bucketConversations, bucketExecutions, bucketEvents, bucketArtifacts, bucketActions,
		bucketIdempotency, bucketCheckpoints, bucketProviderState, bucketOutbox, bucketOutboxFailed,
		bucketExecutionsByTime, bucketExecutionsByConversation, bucketIndexJournal}
)

// formatVersion is the layout this code reads and writes, recorded under metaFormat.
const formatVersion = 3

var metaFormat = []byte("format")

package store

// ConversationReader is what the conversations listing (an extension, docs/protocol.md
// "Conversations") reads: a tenant's conversations and, for each, how many executions it has
// and its newest one. The runtime orders and pages them (backend/conversationlist.go); there
// is no index by last activity, so a page costs a walk of the tenant's conversations.
//
// A later delete keeps a tombstone of the conversation (its id is never reused): a store that
// adds one skips tombstones in ForEachConversation, and Conversation reports them not found.
type ConversationReader interface {
	// ForEachConversation visits every conversation of tenant ("" = anonymous), in no
	// particular order; returning false stops the walk. A record that cannot be decoded is
	// handed to undecodable (when not nil) and the walk goes on.
	ForEachConversation(tenant string, visit func(Conversation) bool, undecodable func(id string, err error)) error
	// ConversationActivity is, for each conversation of ids, the number of its executions of
	// tenant and its newest one (creation order, as ListExecutions; nil when it has none), in
	// one read: one transaction (bbolt), one statement (PostgreSQL). An id absent from the
	// answer has no executions of tenant.
	ConversationActivity(tenant string, ids []string) (map[string]ConversationActivity, error)
}

// ConversationActivity is what a listing shows of a conversation's executions.
type ConversationActivity struct {
	Executions int
	Latest     *Execution
}

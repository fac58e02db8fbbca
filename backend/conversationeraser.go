package backend

import (
	"context"
	"log/slog"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
)

// conversationEraser is the runtime's erasure of conversations: DELETE /v1/conversations/{id}
// (DeleteConversation, conversationdelete.go), the seal that keeps starts out while a delete
// cancels (conversationseal.go), the deletes a dead node left sealed (finishSealed), and what
// every node drops from memory once an erasure's marker reaches it (forgetErased, below). Like
// the other desks it is given by Open what it needs of the rest, never the Runtime itself; the
// Runtime embeds it, so DeleteConversation is the runtime's own API.
type conversationEraser struct {
	store store.Store
	open  func() error // Runtime.checkOpen: ErrClosed once the runtime closed
	log   *slog.Logger
	// conversations reads the conversation for its tenant, forgets whom it belongs to, and has
	// providers release what they keep of it (conversationdesk.go).
	conversations *conversationDesk
	// finishedLogs is the runtime's cache of finished executions: a deleted conversation's
	// logs leave it with the conversation.
	finishedLogs *finishedLogs
	// locate finds an execution wherever it lives (Runtime.locate): cancelling before an
	// erasure goes through its handle, here or on its owner.
	locate func(ctx context.Context, id string) (Handle, error)
	// track runs work that Runtime.Close waits for (providers forgetting a conversation).
	track func(fn func()) bool
	// cancelTimeout is Options.CancelTimeout: one round of cancels can take that long, and a
	// seal is taken over only once its delete cannot still be under way (sealGrace).
	cancelTimeout time.Duration
}

// forgetInMemory drops what this runtime keeps of conversation id outside the store: whom it
// belongs to (so no start skips the store's check) and the logs of its finished executions.
// The stream hub's ring drops the conversation's entries when the erasure's marker reaches it.
func (e *conversationEraser) forgetInMemory(id string) {
	e.conversations.known.remove(id)
	e.finishedLogs.removeConversation(id)
}

// forgetErased is the stream hub's OnErased: the marker of an erasure (this node's or another
// node's) reached this node. What it keeps in memory goes at once, before a reader can see the
// marker; providers forget the conversation on a goroutine of their own (a warm process may
// take a moment to end), and the state keys they name are deleted in one commit.
func (e *conversationEraser) forgetErased(t store.Tombstone) {
	e.forgetInMemory(t.ConversationID)
	e.track(func() {
		keys := e.conversations.release(t.ConversationID)
		if len(keys) == 0 {
			return
		}
		if err := e.store.Commit(&store.Batch{ProviderStateDeletions: keys}); err != nil {
			e.log.Error("delete a deleted conversation's provider state", "conversation", t.ConversationID, "err", err)
		}
	})
}

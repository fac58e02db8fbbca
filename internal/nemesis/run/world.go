package run

import (
	"math/rand/v2"
	"sync"
)

// world is what the clients learned so far and share: the executions that exist (from start
// answers and from the tenant streams), the actions waiting for an answer, the conversations.
// Picks from it are drawn with the picking client's random numbers.
type world struct {
	mu            sync.Mutex
	executions    []known
	seen          map[string]bool
	actions       []pendingAction
	answered      map[string]bool
	conversations []conversation
	// everCreated is every conversation a client created (its own ones too), deleted or not:
	// the final read reads each on every node.
	everCreated []conversation
}

type known struct{ id, tenant string }

type pendingAction struct{ tenant, executionID, actionID string }

// conversation is one the clients created; deleted once a delete of it was answered 200 (it
// stays in the list a while, so that starts and reads into it are tried and must answer 404).
type conversation struct {
	id, tenant, policy string
	deleted            bool
}

func newWorld() *world {
	return &world{seen: map[string]bool{}, answered: map[string]bool{}}
}

func (w *world) addExecution(id, tenant string) {
	if id == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen[id] {
		w.seen[id] = true
		w.executions = append(w.executions, known{id, tenant})
	}
}

// recent draws an execution, most often one of the last few (the ones still running).
func (w *world) recent(rng *rand.Rand) (known, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.executions) == 0 {
		return known{}, false
	}
	window := min(len(w.executions), 12)
	if rng.IntN(4) == 0 {
		window = len(w.executions)
	}
	return w.executions[len(w.executions)-1-rng.IntN(window)], true
}

func (w *world) allExecutions() []known {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]known(nil), w.executions...)
}

func (w *world) addAction(a pendingAction) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answered[a.actionID] {
		w.actions = append(w.actions, a)
	}
}

// action draws a waiting action; it stays in the list for a while, so that two people (or a
// person and the rule or the expiry) may race to answer it.
func (w *world) action(rng *rand.Rand) (pendingAction, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.actions) == 0 {
		return pendingAction{}, false
	}
	i := rng.IntN(len(w.actions))
	a := w.actions[i]
	if rng.IntN(3) == 0 { // answered by enough people: forget it
		w.answered[a.actionID] = true
		w.actions = append(w.actions[:i], w.actions[i+1:]...)
	}
	return a, true
}

// addConversation adds a conversation the clients share (shared: one with a busy policy) or
// only records it for the final read (a client's own).
func (w *world) addConversation(c conversation, shared bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if shared {
		w.conversations = append(w.conversations, c)
	}
	w.everCreated = append(w.everCreated, c)
}

// conversation draws a shared conversation; a deleted one drawn leaves the list half the
// time, so deleted ones are tried for a while and then forgotten.
func (w *world) conversation(rng *rand.Rand) (conversation, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.conversations) == 0 {
		return conversation{}, false
	}
	i := rng.IntN(len(w.conversations))
	c := w.conversations[i]
	if c.deleted && rng.IntN(2) == 0 {
		w.conversations = append(w.conversations[:i], w.conversations[i+1:]...)
	}
	return c, true
}

// markDeleted notes that a delete of conversation id was answered 200.
func (w *world) markDeleted(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.conversations {
		if w.conversations[i].id == id {
			w.conversations[i].deleted = true
		}
	}
}

func (w *world) allConversations() []conversation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]conversation(nil), w.everCreated...)
}

package acp

import (
	"context"
	"fmt"
)

// ForgetConversation is retention's hook (backend.ConversationForgetter): the conversation's
// last execution is gone and the conversation is older than the retention window, so its warm
// process ends, its working directory (under conversation_root) is removed, and its stored
// session is deleted (the key returned). A conversation with a turn running or waiting here
// has just come back to life: it is left alone.
func (p *Provider) ForgetConversation(_ context.Context, conversationID string) ([]string, error) {
	if conversationLanes.busy(laneKey(p.settings.id, conversationID)) {
		return nil, nil
	}
	if s := p.pool.take(conversationID); s != nil {
		_ = p.pool.retire(s)
	}
	if p.workspaces != nil {
		// Through the root: a symlink planted in the directory's place is removed, not followed.
		if err := p.workspaces.remove(conversationID); err != nil {
			return []string{conversationID}, fmt.Errorf("remove the conversation's working directory: %w", err)
		}
	}
	return []string{conversationID}, nil
}

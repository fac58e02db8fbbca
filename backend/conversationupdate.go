package backend

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// MaxTitleRunes bounds a conversation's title.
const MaxTitleRunes = 200

// ErrTitleTooLong is the VALIDATION_ERROR of a title over MaxTitleRunes characters.
var ErrTitleTooLong = &Error{Code: CodeValidation, Message: "title must be at most 200 characters"}

// ConversationUpdate is a JSON merge patch (RFC 7396) of a conversation, an extension
// (docs/protocol.md "Conversations"): what a chat's rename and tag edits send. A field left
// nil is left as it is.
type ConversationUpdate struct {
	// Title replaces the title when set; "" removes it (as the patch's null does).
	Title *string
	// Metadata is merged into the metadata when set: a key whose value is nil is removed, an
	// object value is merged into an object of the same key, anything else replaces the key's
	// value. ClearMetadata (the patch's "metadata": null) first removes every key.
	Metadata      api.JSONObject
	ClearMetadata bool
}

// UpdateConversation applies u to conversation id and returns it as updated; NOT_FOUND when
// unknown or another tenant's, as GetConversation. Updates of one runtime are applied one at a
// time (read, merge, commit); two nodes of a shared store updating the same conversation at
// once keep the later commit whole (last writer wins), never a mix. A rename is not activity:
// the listing's order does not change.
func (d *conversationDesk) UpdateConversation(ctx context.Context, id string, u ConversationUpdate) (api.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return api.Conversation{}, err
	}
	if err := d.open(); err != nil {
		return api.Conversation{}, err
	}
	if u.Title != nil && utf8.RuneCountInString(*u.Title) > MaxTitleRunes {
		return api.Conversation{}, ErrTitleTooLong
	}
	d.updates.Lock()
	defer d.updates.Unlock()
	rec, err := d.lookup(ctx, id)
	if err != nil {
		return api.Conversation{}, err
	}
	if u.Title != nil {
		rec.Title = nil
		if *u.Title != "" {
			rec.Title = clonePtr(u.Title)
		}
	}
	if u.ClearMetadata {
		rec.Metadata = api.JSONObject{}
	}
	if u.Metadata != nil {
		patch, err := normalizeObject(u.Metadata)
		if err != nil {
			return api.Conversation{}, newError(CodeValidation, "Invalid conversation update")
		}
		rec.Metadata = mergePatch(deepCopyObject(rec.Metadata), patch)
	}
	if err := d.store.Commit(&store.Batch{Conversations: []store.Conversation{rec}}); err != nil {
		if errors.Is(err, store.ErrConversationSealed) { // being deleted (conversationseal.go)
			return api.Conversation{}, errConversationSealed(rec.ID, err)
		}
		return api.Conversation{}, storeError("commit conversation", err)
	}
	c := rec.Conversation
	c.Metadata = deepCopyObject(c.Metadata)
	if c.Metadata == nil {
		c.Metadata = api.JSONObject{}
	}
	return c, nil
}

// mergePatch applies patch to target as RFC 7396 section 2 says, on decoded JSON objects
// (a dozen lines: no dependency of the module does it on maps), and returns target.
func mergePatch(target, patch api.JSONObject) api.JSONObject {
	if target == nil {
		target = api.JSONObject{}
	}
	for k, v := range patch {
		switch v := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			inner, _ := target[k].(map[string]any)
			target[k] = map[string]any(mergePatch(inner, v))
		default:
			target[k] = v
		}
	}
	return target
}

package check

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// checkDeletions holds each delete to docs/protocol.md §15.12:
//   - after a 200, every read of the conversation and of its executions that began after the
//     acknowledgement answers 404 on every node (DeletedStillReadable), and no start into it
//     sent after the acknowledgement is acknowledged (StartAfterDelete);
//   - a 409 CONVERSATION_BUSY names only executions of it that had not ended when the delete
//     was sent (DeleteBusyWhileIdle);
//   - a start answered 409 "being deleted" (the seal) comes after a delete with ?cancel=true of
//     its conversation was sent (SealedWithoutDelete);
//   - on a stream, nothing of the conversation follows its conversation.deleted marker
//     (EventAfterDeletion), and a marker follows a delete someone sent (DeletionUnasked).
//
// The marker itself is no gap (checkChain passes over lines without an execution), and the
// usage totals keep the deleted executions' usage (checkUsage).
func checkDeletions(ix *index, rep *Report) {
	ids := make([]string, 0, len(ix.conversations))
	for id := range ix.conversations {
		ids = append(ids, id)
	}
	sort.Strings(ids) // violations in a stable order
	for _, id := range ids {
		c := ix.conversations[id]
		checkBusyAnswers(ix, c, rep)
		checkMarkersAsked(ix, c, rep)
	}
	checkSealedStarts(ix, rep)
	checkReadsAfterDeletes(ix, rep)
	checkRequestsAfterDeletes(ix, rep)
	checkStreamsAfterDeletes(ix, rep)
	checkNothingAfterMarkers(ix, rep)
}

// ackOf is the acknowledged delete of conversation id, nil if none.
func (ix *index) ackOf(id string) *history.Request {
	if c := ix.conversations[id]; c != nil {
		return c.deletion.acked
	}
	return nil
}

// checkReadsAfterDeletes: no answer to a read of an execution (get, list, cancel, respond, a
// final read) that began after its conversation's delete was acknowledged shows it. (Starts
// are checkRequestsAfterDeletes'; an event's receipt is no read that began.)
func checkReadsAfterDeletes(ix *index, rep *Report) {
	for _, id := range ix.order {
		x := ix.execs[id]
		ack := ix.ackOf(x.conversation)
		if ack == nil {
			continue
		}
		for _, o := range x.obs {
			if !o.invoke.After(ack.Complete) || o.state == absent || strings.HasPrefix(o.op, "event ") || o.op == "start" {
				continue
			}
			rep.add(DeletedStillReadable, x.id, []int{ix.lineOf[ack], o.line}, "a %s sent %v after the delete of conversation %s was acknowledged answered it %s", o.op, o.invoke.Sub(ack.Complete).Round(time.Millisecond), x.conversation, o.state)
			break // one per execution is enough to tell
		}
	}
}

// checkRequestsAfterDeletes: a read of a conversation, or a start into it, sent after its
// delete was acknowledged is not answered 2xx.
func checkRequestsAfterDeletes(ix *index, rep *Report) {
	for _, r := range ix.requests {
		if !r.OK() || (r.Op != "getConversation" && r.Op != "start") {
			continue
		}
		conv := conversationOf(r)
		var b startBody
		if r.Op == "start" && json.Unmarshal(r.Body, &b) == nil {
			conv = b.ConversationID
		}
		ack := ix.ackOf(conv)
		if ack == nil || !r.Invoke.After(ack.Complete) {
			continue
		}
		lines, since := []int{ix.lineOf[ack], ix.lineOf[r]}, r.Invoke.Sub(ack.Complete).Round(time.Millisecond)
		if r.Op == "getConversation" {
			rep.add(DeletedStillReadable, "", lines, "conversation %s read on node %s %v after its delete was acknowledged answered %d", conv, r.Node, since, r.Status)
			continue
		}
		exec := ""
		if snaps := answerSnapshots(r.Answer); len(snaps) > 0 {
			exec = snaps[0].ID
		}
		rep.add(StartAfterDelete, exec, lines, "a start into conversation %s sent on node %s %v after its delete was acknowledged answered %d", conv, r.Node, since, r.Status)
	}
}

// checkStreamsAfterDeletes: an execution's or a conversation's stream opened after the
// conversation's delete was acknowledged delivers nothing of it.
func checkStreamsAfterDeletes(ix *index, rep *Report) {
	reported := map[string]bool{}
	for _, l := range ix.events {
		e := l.Event
		if e.Opened.IsZero() || reported[e.Subscription] || e.Type == "conversation.deleted" {
			continue
		}
		conv := ""
		switch e.Stream {
		case history.StreamConversation:
			conv = e.Scope
		case history.StreamExecution:
			if x := ix.execs[e.Scope]; x != nil {
				conv = x.conversation
			}
		}
		ack := ix.ackOf(conv)
		if ack == nil || !e.Opened.After(ack.Complete) {
			continue
		}
		reported[e.Subscription] = true
		rep.add(DeletedStillReadable, e.ExecutionID, []int{ix.lineOf[ack], l.No}, "the %s stream of %s opened on node %s %v after the delete of conversation %s was acknowledged delivered %s", e.Stream, e.Scope, e.Node, e.Opened.Sub(ack.Complete).Round(time.Millisecond), conv, e.Type)
	}
}

// checkSealedStarts: only a delete with ?cancel=true seals a conversation, so a start refused
// as "being deleted" was answered after such a delete of its conversation was sent.
func checkSealedStarts(ix *index, rep *Report) {
	for _, r := range ix.requests {
		var p busyDetails
		var b startBody
		if r.Op != "start" || r.Status != 409 || json.Unmarshal(r.Answer, &p) != nil || !p.Details.Deleting || json.Unmarshal(r.Body, &b) != nil {
			continue
		}
		asked := false
		if c := ix.conversations[b.ConversationID]; c != nil {
			for _, d := range c.deletion.requests {
				asked = asked || (cancelFirst(d) && d.Invoke.Before(r.Complete))
			}
		}
		if !asked {
			rep.add(SealedWithoutDelete, "", []int{ix.lineOf[r]}, "a start into conversation %s on node %s was refused as being deleted, but no delete of it with ?cancel=true had been sent", b.ConversationID, r.Node)
		}
	}
}

// busyDetails is the details member of a CONVERSATION_BUSY problem.
type busyDetails struct {
	Code    string `json:"code"`
	Details struct {
		ExecutionIDs []string `json:"executionIds"`
		Deleting     bool     `json:"deleting"` // sealed by a delete with ?cancel=true
	} `json:"details"`
}

// checkBusyAnswers: each execution a 409 to a delete names was of the conversation and had not
// ended when the delete was sent (an observation of it terminal that completed before then
// shows it had).
func checkBusyAnswers(ix *index, c *conversation, rep *Report) {
	for _, r := range c.deletion.requests {
		var p busyDetails
		if r.Status != 409 || json.Unmarshal(r.Answer, &p) != nil {
			continue
		}
		for _, id := range p.Details.ExecutionIDs {
			x := ix.execs[id]
			if x == nil {
				continue
			}
			if x.conversation != "" && x.conversation != c.id {
				rep.add(DeleteBusyWhileIdle, id, []int{ix.lineOf[r]}, "the delete of conversation %s was refused for an execution of conversation %s", c.id, x.conversation)
				continue
			}
			var ended *observation
			for i := range x.obs {
				o := &x.obs[i]
				if isTerminal(o.state) && o.complete.Before(r.Invoke) && (ended == nil || o.complete.Before(ended.complete)) {
					ended = o
				}
			}
			if ended != nil {
				rep.add(DeleteBusyWhileIdle, id, []int{ix.lineOf[r], ended.line}, "the delete of conversation %s on node %s was refused as busy with it, but it was seen %s %v before the delete was sent", c.id, r.Node, ended.state, r.Invoke.Sub(ended.complete).Round(time.Millisecond))
			}
		}
	}
}

// checkMarkersAsked: a conversation.deleted marker follows a delete sent before it arrived.
func checkMarkersAsked(ix *index, c *conversation, rep *Report) {
	for _, m := range c.deletion.markers {
		asked := false
		for _, r := range c.deletion.requests {
			asked = asked || r.Invoke.Before(m.Event.T)
		}
		if !asked {
			rep.add(DeletionUnasked, "", []int{m.No}, "the %s stream (subscription %s) marked conversation %s deleted, but no delete of it had been sent", m.Event.Stream, m.Event.Subscription, c.id)
		}
	}
}

// checkNothingAfterMarkers: on each stream, across its resumes, no event of a conversation's
// executions follows the conversation's marker (the erasure took its entries from the log,
// and nothing of it is written after).
func checkNothingAfterMarkers(ix *index, rep *Report) {
	for _, ch := range ix.chains() {
		marked := map[string]int{} // conversation -> the marker's line
		for _, l := range ch.lines {
			if id := markedConversation(l); id != "" {
				if marked[id] == 0 {
					marked[id] = l.No
				}
				continue
			}
			x := ix.execs[l.Event.ExecutionID]
			if x == nil || marked[x.conversation] == 0 {
				continue
			}
			rep.add(EventAfterDeletion, x.id, []int{marked[x.conversation], l.No}, "%s (sequence %d) arrived on the %s stream (subscription %s) after conversation %s was marked deleted on it", l.Event.Type, l.Event.Sequence, ch.stream, ch.root, x.conversation)
			marked[x.conversation] = -1 // once a stream is enough
		}
	}
}

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
	byConv := ix.executionsByConversation()
	for _, id := range ids {
		c := ix.conversations[id]
		if ack := c.deletion.acked; ack != nil {
			checkGoneAfter(ix, c, ack, byConv[id], rep)
		}
		checkBusyAnswers(ix, c, rep)
		checkMarkersAsked(ix, c, rep)
	}
	checkNothingAfterMarkers(ix, rep)
}

// executionsByConversation groups the executions by the conversation their snapshots name.
func (ix *index) executionsByConversation() map[string][]*execution {
	out := map[string][]*execution{}
	for _, id := range ix.order {
		x := ix.execs[id]
		if x.conversation != "" {
			out[x.conversation] = append(out[x.conversation], x)
		}
	}
	return out
}

// checkGoneAfter: nothing of conversation c answers a read, a start or a stream that began
// after ack completed.
func checkGoneAfter(ix *index, c *conversation, ack *history.Request, execs []*execution, rep *Report) {
	ackLine, after := ix.lineOf[ack], ack.Complete
	for _, x := range execs {
		for _, o := range x.obs {
			if !o.invoke.After(after) || o.state == absent || strings.HasPrefix(o.op, "event ") || o.op == "start" {
				continue
			}
			rep.add(DeletedStillReadable, x.id, []int{ackLine, o.line}, "a %s sent %v after the delete of conversation %s was acknowledged answered it %s", o.op, o.invoke.Sub(after).Round(time.Millisecond), c.id, o.state)
			break // one per execution is enough to tell
		}
	}
	for _, r := range ix.requests {
		switch {
		case !r.OK() || !r.Invoke.After(after):
		case r.Op == "getConversation" && conversationOf(r) == c.id:
			rep.add(DeletedStillReadable, "", []int{ackLine, ix.lineOf[r]}, "conversation %s read on node %s %v after its delete was acknowledged answered %d", c.id, r.Node, r.Invoke.Sub(after).Round(time.Millisecond), r.Status)
		case r.Op == "start":
			var b startBody
			if json.Unmarshal(r.Body, &b) != nil || b.ConversationID != c.id {
				continue
			}
			exec := ""
			if snaps := answerSnapshots(r.Answer); len(snaps) > 0 {
				exec = snaps[0].ID
			}
			rep.add(StartAfterDelete, exec, []int{ackLine, ix.lineOf[r]}, "a start into conversation %s sent on node %s %v after its delete was acknowledged answered %d", c.id, r.Node, r.Invoke.Sub(after).Round(time.Millisecond), r.Status)
		}
	}
	mine := map[string]bool{}
	for _, x := range execs {
		mine[x.id] = true
	}
	reported := map[string]bool{}
	for _, l := range ix.events {
		e := l.Event
		if e.Opened.IsZero() || !e.Opened.After(after) || reported[e.Subscription] {
			continue
		}
		ofIt := (e.Stream == history.StreamConversation && e.Scope == c.id) ||
			(e.Stream == history.StreamExecution && mine[e.Scope])
		if !ofIt || e.Type == "conversation.deleted" {
			continue
		}
		reported[e.Subscription] = true
		rep.add(DeletedStillReadable, e.ExecutionID, []int{ackLine, l.No}, "the %s stream of %s opened on node %s %v after the delete of conversation %s was acknowledged delivered %s", e.Stream, e.Scope, e.Node, e.Opened.Sub(after).Round(time.Millisecond), c.id, e.Type)
	}
}

// busyDetails is the details member of a CONVERSATION_BUSY problem.
type busyDetails struct {
	Code    string `json:"code"`
	Details struct {
		ExecutionIDs []string `json:"executionIds"`
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

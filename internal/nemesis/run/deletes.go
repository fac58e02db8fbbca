package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"
)

// deleteConversation sends DELETE /v1/conversations/{id} (docs/protocol.md §15.12) for a
// conversation the clients share, or now and then the client's own: with ?cancel=true half
// the time (the conversation is sealed and what runs in it cancelled; without it a running
// conversation answers 409), on a random node, a third of the time while starts into the same
// conversation are in flight. Without an answer, or with a 5xx, it is retried on another node,
// as an SDK would; after a 200 it is sometimes sent again on another node (which must answer
// 404). The checker holds every answer to what the protocol promises (check/deletions_check.go).
func (r *runner) deleteConversation(ctx context.Context, c *client) {
	conv, own := r.pickForDeletion(c)
	if conv.id == "" {
		return
	}
	c.deletes++
	path := "/v1/conversations/" + url.PathEscape(conv.id)
	if c.rng.IntN(2) == 0 {
		path += "?cancel=true"
	}
	var racing sync.WaitGroup
	if c.rng.IntN(3) == 0 {
		// Starts into the conversation from a helper of its own (its own keys and random
		// numbers: a client's are not shared between goroutines), sent just before the delete.
		helper := &client{name: fmt.Sprintf("%s.d%d", c.name, c.deletes), tenant: conv.tenant,
			rng: rand.New(rand.NewPCG(c.rng.Uint64(), c.rng.Uint64()))}
		starts := 1 + c.rng.IntN(3)
		racing.Go(func() {
			for range starts {
				r.start(ctx, helper, conv.id, "")
			}
		})
		r.counts.add("delete racing starts", 1)
		select {
		case <-ctx.Done():
		case <-time.After(between(c.rng, 0, 40*time.Millisecond)):
		}
	}
	defer racing.Wait()
	r.counts.add("delete issued", 1)
	var last *node
	for try := range 3 {
		n := r.node(c.rng)
		for n == last && len(r.cluster.nodes) > 1 {
			n = r.node(c.rng) // a retry goes to another node
		}
		last = n
		status, _ := r.caller.do(ctx, n, call{client: c.name, op: "deleteConversation", method: "DELETE",
			path: path, tenant: conv.tenant, conversationID: conv.id})
		if status == 200 {
			r.counts.add("delete acknowledged", 1)
			r.world.markDeleted(conv.id)
			if own {
				c.own = "" // the next start makes a new one
			}
			if c.rng.IntN(5) == 0 { // asked again: 404 everywhere from now on
				r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "deleteConversation", method: "DELETE",
					path: path, tenant: conv.tenant, conversationID: conv.id})
			}
			return
		}
		if (status != 0 && status < 500) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(between(c.rng, 100*time.Millisecond, time.Duration(try+1)*time.Second)):
		}
	}
}

// pickForDeletion draws the conversation to delete: the client's own a quarter of the time
// (then own is true), else one the clients share, of any tenant (deleted as its tenant).
func (r *runner) pickForDeletion(c *client) (conv conversation, own bool) {
	if c.own != "" && c.rng.IntN(4) == 0 {
		return conversation{id: c.own, tenant: c.tenant}, true
	}
	conv, _ = r.world.conversation(c.rng)
	return conv, false
}

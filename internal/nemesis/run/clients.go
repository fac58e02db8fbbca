package run

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// client is one concurrent user of the protocol: it draws an operation, a tenant, a node and
// a think time from its own random numbers (the seed's stream for that client) and sends it.
type client struct {
	name    string
	tenant  string
	rng     *rand.Rand
	starts  int
	deletes int
	own     string // the client's own conversation (no busy policy: parallel)
}

// busyPolicies are the conversation policies the clients create conversations under.
var busyPolicies = []string{"parallel", "reject", "enqueue", "interrupt"}

// ops and their weights: what a client does next.
var ops = []struct {
	name   string
	weight int
}{
	{"start", 30}, {"startInConversation", 18}, {"get", 14}, {"cancel", 7}, {"respond", 12},
	{"stream", 8}, {"list", 3}, {"usage", 3}, {"getConversation", 3}, {"createConversation", 3},
	{"deleteConversation", 3},
}

func (r *runner) clientLoop(ctx context.Context, c *client) {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	for ctx.Err() == nil {
		pick := c.rng.IntN(total)
		op := ops[0].name
		for _, o := range ops {
			if pick < o.weight {
				op = o.name
				break
			}
			pick -= o.weight
		}
		r.clientOp(ctx, c, op)
		select {
		case <-ctx.Done():
		case <-time.After(between(c.rng, 20*time.Millisecond, 400*time.Millisecond)):
		}
	}
}

func (r *runner) node(rng *rand.Rand) *node {
	return r.cluster.nodes[rng.IntN(len(r.cluster.nodes))]
}

func (r *runner) clientOp(ctx context.Context, c *client, op string) {
	switch op {
	case "start":
		if c.own == "" {
			c.own = r.createConversation(ctx, c, "")
		}
		if c.own != "" {
			r.start(ctx, c, c.own, "")
		}
	case "startInConversation":
		if conv, ok := r.world.conversation(c.rng); ok && conv.tenant == c.tenant {
			policy := "" // the conversation's own, mostly; sometimes the start overrides it
			if c.rng.IntN(5) == 0 {
				policy = busyPolicies[c.rng.IntN(len(busyPolicies))]
			}
			r.start(ctx, c, conv.id, policy)
		}
	case "createConversation":
		r.createConversation(ctx, c, busyPolicies[c.rng.IntN(len(busyPolicies))])
	case "deleteConversation":
		r.deleteConversation(ctx, c) // deletes.go
	case "get":
		if e, ok := r.world.recent(c.rng); ok {
			r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "get", method: "GET",
				path: "/v1/executions/" + e.id, tenant: e.tenant})
		}
	case "cancel":
		if e, ok := r.world.recent(c.rng); ok {
			r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "cancel", method: "POST",
				path: "/v1/executions/" + e.id + ":cancel", tenant: e.tenant,
				body: map[string]any{"reason": "nemesis " + c.name}})
		}
	case "respond":
		if a, ok := r.world.action(c.rng); ok {
			body := map[string]any{"approved": c.rng.IntN(4) != 0}
			r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "respond", method: "POST",
				path:   "/v1/executions/" + a.executionID + "/actions/" + a.actionID + ":respond",
				tenant: a.tenant, body: body})
		}
	case "stream":
		if e, ok := r.world.recent(c.rng); ok {
			streamCtx, cancel := context.WithTimeout(ctx, between(c.rng, 2*time.Second, 10*time.Second))
			r.follow(streamCtx, c.rng, follow{stream: "execution", scope: e.id, tenant: e.tenant,
				path: "/v1/executions/" + e.id + "/events", client: c.name,
				done: func(l history.Event) bool { return terminalEvent(l.Type) }})
			cancel()
		}
	case "list":
		r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "list", method: "GET",
			path: "/v1/executions?limit=50", tenant: c.tenant})
	case "usage":
		r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "usage", method: "GET",
			path: "/v1/usage", tenant: c.tenant})
	case "getConversation":
		if conv, ok := r.world.conversation(c.rng); ok {
			r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "getConversation", method: "GET",
				path: "/v1/conversations/" + url.PathEscape(conv.id), tenant: conv.tenant, conversationID: conv.id})
		}
	}
}

// createConversation creates a conversation under policy ("": none, the portable parallel)
// and follows its stream for a while; it returns the id ("" when no node answered).
func (r *runner) createConversation(ctx context.Context, c *client, policy string) string {
	body := map[string]any{}
	if policy != "" {
		body["busyPolicy"] = policy
		r.counts.add("conversation "+policy, 1)
	}
	for range 3 {
		status, answer := r.caller.do(ctx, r.node(c.rng), call{client: c.name, op: "createConversation",
			method: "POST", path: "/v1/conversations", tenant: c.tenant, body: body})
		var conv struct {
			ID string `json:"id"`
		}
		if status == 201 && json.Unmarshal(answer, &conv) == nil && conv.ID != "" {
			r.world.addConversation(conversation{id: conv.ID, tenant: c.tenant, policy: policy}, policy != "")
			// Followed from its beginning for a drawn while (not the whole run: an hour's run
			// creates thousands of conversations, and each follower holds a connection).
			rng := rand.New(rand.NewPCG(c.rng.Uint64(), c.rng.Uint64()))
			span := between(rng, 10*time.Second, time.Minute)
			r.background(func() {
				followCtx, cancel := context.WithTimeout(ctx, span)
				defer cancel()
				r.follow(followCtx, rng, follow{stream: "conversation", scope: conv.ID, tenant: c.tenant,
					path: "/v1/conversations/" + conv.ID + "/events", client: c.name,
					done: func(l history.Event) bool { return l.Type == "conversation.deleted" }}) // its stream ends there
			})
			return conv.ID
		}
		if ctx.Err() != nil {
			return ""
		}
	}
	return ""
}

// start sends one start with an idempotency key; without an answer, or with one that says
// "not now" (503, 429, 5xx), it is retried with the same key and body on another node, up to
// three times, as an SDK would.
func (r *runner) start(ctx context.Context, c *client, conversationID, policy string) {
	c.starts++
	key := fmt.Sprintf("%s-%d", c.name, c.starts)
	body := r.startBody(c, conversationID, policy, key)
	var last *node
	for try := range 4 {
		n := r.node(c.rng)
		for n == last && len(r.cluster.nodes) > 1 {
			n = r.node(c.rng) // a retry goes to another node
		}
		last = n
		status, answer := r.caller.do(ctx, n, call{client: c.name, op: "start", method: "POST",
			path: "/v1/executions", tenant: c.tenant, key: key, body: body})
		if status == 202 {
			var e struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(answer, &e) == nil {
				r.world.addExecution(e.ID, c.tenant)
			}
			return
		}
		if (status != 0 && status < 500 && status != 429) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(between(c.rng, 100*time.Millisecond, time.Duration(try+1)*time.Second)):
		}
	}
}

// startBody draws what the execution does: a quick echo, a longer one, one that waits for an
// approval (answered by people, the standing rule of the budget tenant, or expiry), and on the
// budget tenant one that reports usage.
func (r *runner) startBody(c *client, conversationID, policy, key string) map[string]any {
	words := 1 + c.rng.IntN(8)
	input := ""
	for i := range words {
		input += fmt.Sprintf("w%d ", i)
	}
	config := map[string]any{"delayMs": float64(5 + c.rng.IntN(120))}
	body := map[string]any{"providerId": "mock", "input": input, "idempotencyKey": key,
		"conversationId": conversationID}
	switch c.rng.IntN(6) {
	case 0, 1:
		// Expiry is always armed, so that no approval waits past the quiet period; people
		// (and on the rule's tenant, the rule) race it.
		config["requireApproval"] = true
		body["actionTimeoutSeconds"] = r.settings.ActionTimeout.Seconds()
	case 2:
		config["repeat"] = float64(2 + c.rng.IntN(6))
	}
	if c.tenant == budgetTenant && c.rng.IntN(2) == 0 {
		config["usage"] = map[string]any{"inputTokens": float64(r.settings.UsageStepTokens / 2),
			"outputTokens": float64(r.settings.UsageStepTokens / 2)}
	}
	body["config"] = config
	if policy != "" {
		body["busyPolicy"] = policy
	}
	return body
}

package backend

import (
	"context"
	"strings"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Who did it. The caller names the authenticated identity behind a request through the context
// (WithActor; the HTTP edge takes it from a configurable placeholder such as
// {http.auth.user.id}), and the runtime records it as `actor` in the data of the events that
// request causes: action.responded (who answered) and run.cancelled (who cancelled; the first
// caller when several cancels join one operation). A context without one records nothing, so
// the data stays exactly the reference's. At a node that does not run the execution, the
// identity travels to the owner inside the command's body (package cluster), so the owner records
// the caller's identity, not its own.

type actorContextKey struct{}

// WithActor returns a context whose cancels and action responses are recorded as made by id.
// An id that is empty or only spaces records nothing (an authentication that identified nobody
// is not somebody called "").
func WithActor(ctx context.Context, id string) context.Context {
	if strings.TrimSpace(id) == "" {
		return ctx
	}
	return context.WithValue(ctx, actorContextKey{}, id)
}

// WithActorOf returns a context acting as a, kind included (a command carries the poster's
// actor whole: a standing rule's or an expiry's answer reaches the owner as what it is). An
// actor without an id records nothing, as in WithActor.
func WithActorOf(ctx context.Context, a api.Actor) context.Context {
	if strings.TrimSpace(a.ID) == "" {
		return ctx
	}
	if a.Kind == nil || *a.Kind == api.ActorKindUser {
		return WithActor(ctx, a.ID)
	}
	return context.WithValue(ctx, actorContextKey{}, a)
}

// ActorFrom returns the identity ctx acts as, or nil when none was named.
func ActorFrom(ctx context.Context) *api.Actor {
	switch v := ctx.Value(actorContextKey{}).(type) {
	case string:
		if v != "" {
			return &api.Actor{ID: v}
		}
	case api.Actor:
		a := v
		a.Kind = clonePtr(v.Kind)
		return &a
	}
	return nil
}

// The actors of automatic answers (docs/protocol.md, "Approvals"): a standing rule is named by
// its id, an expiry by the word.
func ruleActor(ruleID string) api.Actor {
	kind := api.ActorKindRule
	return api.Actor{ID: ruleID, Kind: &kind}
}

func expiryActor() api.Actor {
	kind := api.ActorKindExpiry
	return api.Actor{ID: "expiry", Kind: &kind}
}

// putActor adds the actor member to an event's data when there is one.
func putActor(data map[string]any, a *api.Actor) {
	if a != nil {
		data["actor"] = a
	}
}

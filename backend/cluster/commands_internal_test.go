package cluster

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A command carries its poster's actor whole: an expiry's or a standing rule's answer forwarded
// to the owner must still say what answered, not pass as a user of that name (the nemesis
// checker found expiries recorded as a user called "expiry").
func TestCommandKeepsTheActorKind(t *testing.T) {
	for _, kind := range []api.ActorKind{api.ActorKindExpiry, api.ActorKindRule, api.ActorKindUser} {
		k := kind
		got := backend.ActorFrom(withActorOf(context.Background(), &api.Actor{ID: "a1", Kind: &k}))
		if got == nil || got.ID != "a1" {
			t.Fatalf("kind %s: actor %+v, want id a1", kind, got)
		}
		if kind == api.ActorKindUser {
			continue // a user travels as its id alone, as a request's own actor does
		}
		if got.Kind == nil || *got.Kind != kind {
			t.Errorf("kind %s: forwarded actor lost its kind: %+v", kind, got)
		}
	}
	if ctx := withActorOf(context.Background(), nil); backend.ActorFrom(ctx) != nil {
		t.Errorf("no actor: got %+v", backend.ActorFrom(ctx))
	}
}

// Package webhook tells configured receivers about executions (docs/webhooks.md): when one needs
// someone (action.required) or has finished, following the Standard Webhooks specification.
// A notification is written to the store's outbox in the same transaction as the event it
// reports (planner.go: the store calls the planner inside every commit), and the sender
// (sender.go) delivers it from there, so a commit never waits for a receiver and nothing
// committed is lost across restarts.
//
// The runtime (package backend) knows this package only through the small interface it defines,
// backend.Webhooks: the program that assembles a runtime builds a Notifier (notifier.go) and
// hands it over in backend.Options. That keeps net/http out of the runtime.
package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Subscription is one receiver: where notifications go, which event types it wants and the
// secret they are signed with. Subscriptions come from trusted configuration (the Caddyfile,
// Config), never from requests: the start request's config belongs to providers.
type Subscription struct {
	URL string // http or https
	// Events are the event types sent; empty means DefaultEvents.
	Events []string
	// Secret is the Standard Webhooks signing secret, "whsec_" + base64 of 24 to 64 random
	// bytes (the prefix may be omitted).
	Secret string
	// Tenants limits the subscription to the executions of these tenants (the names the
	// handler's tenant setting gives, docs/protocol.md §15). Empty: every tenant's executions,
	// which suits the operator's own receiver, not a tenant's.
	Tenants []string `json:",omitempty"`
}

// DefaultEvents are the event types a subscription receives unless it names others: someone is
// needed, the execution ended, or a conversation was deleted (what a receiver kept of it
// should go too: erasure.go).
var DefaultEvents = []string{
	string(api.StandardEventTypeActionRequired),
	string(api.StandardEventTypeRunCompleted),
	string(api.StandardEventTypeRunFailed),
	string(api.StandardEventTypeRunCancelled),
	ConversationDeleted,
}

// target is a validated subscription.
type target struct {
	url    string
	host   string // what logs name: never the secret, the path or the payload
	id     [store.TargetIDLen]byte
	events map[string]bool
	key    []byte          // the decoded secret
	tenant map[string]bool // nil: every tenant
}

func (t *target) servesTenant(tenant string) bool { return t.tenant == nil || t.tenant[tenant] }

// ParseSecret decodes a Standard Webhooks secret ("whsec_" + base64).
func ParseSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, errors.New("webhook secret must be whsec_ followed by base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("webhook secret must decode to 24 to 64 bytes, got %d", len(key))
	}
	return key, nil
}

// newTargets validates subscriptions. Two subscriptions may not share a URL: the URL identifies
// the lane a notification belongs to.
func newTargets(subs []Subscription) (map[[store.TargetIDLen]byte]*target, error) {
	targets := make(map[[store.TargetIDLen]byte]*target, len(subs))
	for i, s := range subs {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("webhook %d: url must be an absolute http or https URL, got %q", i+1, s.URL)
		}
		key, err := ParseSecret(s.Secret)
		if err != nil {
			return nil, fmt.Errorf("webhook %d (%s): %w", i+1, u.Host, err)
		}
		events := s.Events
		if len(events) == 0 {
			events = DefaultEvents
		}
		t := &target{url: s.URL, host: u.Host, id: targetID(s.URL), events: map[string]bool{}, key: key}
		for _, typ := range events {
			if !api.StandardEventType(typ).Valid() && typ != BudgetExceeded && typ != ActionExpired && typ != ConversationDeleted {
				return nil, fmt.Errorf("webhook %d (%s): unknown event type %q", i+1, u.Host, typ)
			}
			t.events[typ] = true
		}
		for _, tenant := range s.Tenants {
			if tenant == "" {
				return nil, fmt.Errorf("webhook %d (%s): an empty tenant name", i+1, u.Host)
			}
			if t.tenant == nil {
				t.tenant = map[string]bool{}
			}
			t.tenant[tenant] = true
		}
		if _, dup := targets[t.id]; dup {
			return nil, fmt.Errorf("webhook %d: url %s is subscribed twice", i+1, u.Host)
		}
		targets[t.id] = t
	}
	return targets, nil
}

// targetID is the digest of a URL that keys a target's outbox rows: notifications of one
// execution for one target form a lane, delivered in order.
func targetID(u string) [store.TargetIDLen]byte {
	sum := sha256.Sum256([]byte(u))
	return [store.TargetIDLen]byte(sum[:store.TargetIDLen])
}

package backend

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Webhooks (docs/webhooks.md): the runtime tells configured receivers when an execution needs
// someone (action.required) or has finished, following the Standard Webhooks specification.
// The notification is written to an outbox in the same store transaction as the event it
// reports (outbox.go), and a sender delivers it from there (webhooks_sender.go), so a commit
// never waits for a receiver and nothing committed is lost across restarts.

// WebhookSubscription is one receiver: where notifications go, which event types it wants and
// the secret they are signed with. Subscriptions come from trusted configuration (the Caddyfile,
// Options), never from requests: the start request's config belongs to providers.
type WebhookSubscription struct {
	URL string // http or https
	// Events are the event types sent; empty means DefaultWebhookEvents.
	Events []string
	// Secret is the Standard Webhooks signing secret, "whsec_" + base64 of 24 to 64 random
	// bytes (the prefix may be omitted).
	Secret string
}

// DefaultWebhookEvents are the event types a subscription receives unless it names others:
// someone is needed, or the execution ended.
var DefaultWebhookEvents = []string{
	string(api.StandardEventTypeActionRequired),
	string(api.StandardEventTypeRunCompleted),
	string(api.StandardEventTypeRunFailed),
	string(api.StandardEventTypeRunCancelled),
}

// WebhookDelivery tunes the sender. Zero fields take the defaults below.
type WebhookDelivery struct {
	Workers     int           // concurrent deliveries (across executions); default 8
	Timeout     time.Duration // per request; default 10s
	MinBackoff  time.Duration // cap of the first retry's delay; default 1s
	MaxBackoff  time.Duration // cap of any retry's delay; default 5m
	MaxAttempts int           // attempts before a notification is recorded as failed; default 20
	MaxAge      time.Duration // a notification older than this is not retried again; default 24h
}

// Webhook delivery defaults. With full jitter the delay before retry n is uniform in
// [0, min(MaxBackoff, MinBackoff·2^(n-1))): the 19 retries of 20 attempts wait at most about
// 58 minutes in all (half that on average) before the notification is recorded as failed.
const (
	DefaultWebhookWorkers     = 8
	DefaultWebhookTimeout     = 10 * time.Second
	DefaultWebhookMinBackoff  = time.Second
	DefaultWebhookMaxBackoff  = 5 * time.Minute
	DefaultWebhookMaxAttempts = 20
	DefaultWebhookMaxAge      = 24 * time.Hour
)

func (d WebhookDelivery) withDefaults() WebhookDelivery {
	if d.Workers <= 0 {
		d.Workers = DefaultWebhookWorkers
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultWebhookTimeout
	}
	if d.MinBackoff <= 0 {
		d.MinBackoff = DefaultWebhookMinBackoff
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = DefaultWebhookMaxBackoff
	}
	d.MaxBackoff = max(d.MaxBackoff, d.MinBackoff)
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultWebhookMaxAttempts
	}
	if d.MaxAge <= 0 {
		d.MaxAge = DefaultWebhookMaxAge
	}
	return d
}

// WebhookObserver, when the Options' Observer implements it too, receives the sender's metrics
// hooks. Calls must return quickly.
type WebhookObserver interface {
	WebhookDelivered()
	WebhookRetried()
	WebhookFailed()
	// WebhookQueueOldest reports the creation time of the oldest undelivered notification after
	// every scan of the outbox; the zero time when none is waiting.
	WebhookQueueOldest(time.Time)
}

// webhookTarget is a validated subscription.
type webhookTarget struct {
	url    string
	host   string // what logs name: never the secret, the path or the payload
	id     [store.TargetIDLen]byte
	events map[string]bool
	key    []byte // the decoded secret
}

// targetIDLen is the length of the URL digest in outbox keys: notifications of one execution for
// one target form a lane, delivered in order.
const targetIDLen = 8

// ParseWebhookSecret decodes a Standard Webhooks secret ("whsec_" + base64).
func ParseWebhookSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, errors.New("webhook secret must be whsec_ followed by base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("webhook secret must decode to 24 to 64 bytes, got %d", len(key))
	}
	return key, nil
}

// newWebhookTargets validates subscriptions. Two subscriptions may not share a URL: the URL
// identifies the lane a notification belongs to.
func newWebhookTargets(subs []WebhookSubscription) (map[[store.TargetIDLen]byte]*webhookTarget, error) {
	targets := make(map[[store.TargetIDLen]byte]*webhookTarget, len(subs))
	for i, s := range subs {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("webhook %d: url must be an absolute http or https URL, got %q", i+1, s.URL)
		}
		key, err := ParseWebhookSecret(s.Secret)
		if err != nil {
			return nil, fmt.Errorf("webhook %d (%s): %w", i+1, u.Host, err)
		}
		events := s.Events
		if len(events) == 0 {
			events = DefaultWebhookEvents
		}
		t := &webhookTarget{url: s.URL, host: u.Host, id: webhookTargetID(s.URL), events: map[string]bool{}, key: key}
		for _, typ := range events {
			if !slices.Contains(standardEventTypes, api.StandardEventType(typ)) {
				return nil, fmt.Errorf("webhook %d (%s): unknown event type %q", i+1, u.Host, typ)
			}
			t.events[typ] = true
		}
		if _, dup := targets[t.id]; dup {
			return nil, fmt.Errorf("webhook %d: url %s is subscribed twice", i+1, u.Host)
		}
		targets[t.id] = t
	}
	return targets, nil
}

var standardEventTypes = []api.StandardEventType{
	api.StandardEventTypeRunQueued, api.StandardEventTypeRunStarted,
	api.StandardEventTypeOutputTextDelta, api.StandardEventTypeOutputTextDone,
	api.StandardEventTypeActionRequired, api.StandardEventTypeActionResponded,
	api.StandardEventTypeArtifactCreated, api.StandardEventTypeProviderEvent,
	api.StandardEventTypeRunCompleted, api.StandardEventTypeRunFailed, api.StandardEventTypeRunCancelled,
}

func webhookTargetID(u string) [store.TargetIDLen]byte {
	sum := sha256.Sum256([]byte(u))
	return [store.TargetIDLen]byte(sum[:store.TargetIDLen])
}

// webhookPlanner turns committed events into outbox rows. The store calls it inside the
// transaction that writes the events (store.OutboxPlanner), so the rows are exactly as durable as
// the events, whichever path wrote them (provider emissions, lifecycle changes, recovery).
type webhookPlanner struct {
	targets map[[store.TargetIDLen]byte]*webhookTarget
	wanted  map[string]bool // union of the targets' event types: the cheap first test
	wake    func()
}

func newWebhookPlanner(targets map[[store.TargetIDLen]byte]*webhookTarget, wake func()) *webhookPlanner {
	p := &webhookPlanner{targets: targets, wanted: map[string]bool{}, wake: wake}
	for _, t := range targets {
		for typ := range t.events {
			p.wanted[typ] = true
		}
	}
	return p
}

// Wants reports whether any target subscribes to events of typ.
func (p *webhookPlanner) Wants(typ api.StandardEventType) bool { return p.wanted[string(typ)] }

// Committed wakes the sender after a commit that wrote rows.
func (p *webhookPlanner) Committed() { p.wake() }

// Notifications builds the rows for event e, given the execution as of this commit.
func (p *webhookPlanner) Notifications(executionID string, e Event, exec api.Execution, at time.Time) ([]store.Notification, error) {
	var head struct {
		Time api.Timestamp `json:"time"`
	}
	if err := json.Unmarshal(e.JSON, &head); err != nil {
		return nil, fmt.Errorf("webhook payload of %s:%d: %w", executionID, e.Sequence, err)
	}
	execJSON, err := json.Marshal(cloneExecution(exec))
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(struct {
		Type      api.StandardEventType `json:"type"`
		Timestamp api.Timestamp         `json:"timestamp"`
		Data      struct {
			Event     json.RawMessage `json:"event"`
			Execution json.RawMessage `json:"execution"`
		} `json:"data"`
	}{Type: e.Type, Timestamp: head.Time, Data: struct {
		Event     json.RawMessage `json:"event"`
		Execution json.RawMessage `json:"execution"`
	}{e.JSON, execJSON}})
	if err != nil {
		return nil, err
	}
	var out []store.Notification
	for id, t := range p.targets {
		if !t.events[string(e.Type)] {
			continue
		}
		out = append(out, store.Notification{
			ExecutionID: executionID, Sequence: e.Sequence, Target: id, URL: t.url,
			Body: body, CreatedAt: at, NextAttempt: at,
		})
	}
	return out, nil
}

// webhookID is the Standard Webhooks message id: stable across retries (receivers deduplicate
// on it), the same for every receiver of one event.
func webhookID(executionID string, seq int64) string {
	return fmt.Sprintf("msg_%s_%d", strings.TrimPrefix(executionID, executionIDPrefix), seq)
}

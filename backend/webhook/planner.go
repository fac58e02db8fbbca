package webhook

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// planner turns committed events into outbox rows. The store calls it inside the transaction
// that writes the events (store.OutboxPlanner), so the rows are exactly as durable as the
// events, whichever path wrote them (provider emissions, lifecycle changes, recovery).
type planner struct {
	targets map[[store.TargetIDLen]byte]*target
	wanted  map[string]bool // union of the targets' event types: the cheap first test
	wake    func()
}

func newPlanner(targets map[[store.TargetIDLen]byte]*target, wake func()) *planner {
	p := &planner{targets: targets, wanted: map[string]bool{}, wake: wake}
	for _, t := range targets {
		for typ := range t.events {
			p.wanted[typ] = true
			if typ == ActionExpired {
				p.wanted[string(api.StandardEventTypeActionResponded)] = true // the event it is
			}
		}
	}
	if p.wanted[BudgetExceeded] { // carried by a provider.event (budget.go)
		p.wanted[string(api.StandardEventTypeProviderEvent)] = true
	}
	return p
}

// ActionExpired is the notification type of an action.responded whose actor is the action's
// expiry (docs/webhooks.md, "action.expired"): a subscription may list it among its events.
// Not an event type: the event is action.responded, and its notification says action.expired
// to the subscriptions that list it (one notification per event and subscription: a
// subscription that lists both gets action.expired for an expiry).
const ActionExpired = "action.expired"

// notificationType is the type a subscription's notification of e says, "" when t wants none:
// action.expired for an expiry's answer, budget.exceeded for a budget's crossing (budget.go),
// when t lists them, else the event's own type.
func (t *target) notificationType(e store.Event, expired bool) string {
	switch {
	case expired && t.events[ActionExpired]:
		return ActionExpired
	case e.Type == api.StandardEventTypeProviderEvent && t.events[BudgetExceeded] && isBudgetExceeded(e):
		return BudgetExceeded
	case t.events[string(e.Type)]:
		return string(e.Type)
	}
	return ""
}

// Wants reports whether any target subscribes to events of typ.
func (p *planner) Wants(typ api.StandardEventType) bool { return p.wanted[string(typ)] }

// Committed wakes the sender after a commit that wrote rows.
func (p *planner) Committed() { p.wake() }

// Notifications builds the rows for event e, given the execution as of this commit.
func (p *planner) Notifications(executionID string, e store.Event, rec store.Execution, at time.Time) ([]store.Notification, error) {
	var head struct {
		Time api.Timestamp `json:"time"`
		Data struct {
			Actor *struct {
				Kind string `json:"kind"`
			} `json:"actor"`
		} `json:"data"`
	}
	decoded := false
	var out []store.Notification
	bodies := map[string][]byte{} // by notification type: at most two per event
	for _, t := range p.targets {
		if !t.servesTenant(rec.Tenant) || (!t.events[string(e.Type)] && !t.events[ActionExpired] && !t.events[BudgetExceeded]) {
			continue
		}
		if !decoded {
			if err := json.Unmarshal(e.JSON, &head); err != nil {
				return nil, fmt.Errorf("webhook payload of %s:%d: %w", executionID, e.Sequence, err)
			}
			decoded = true
		}
		expired := e.Type == api.StandardEventTypeActionResponded && head.Data.Actor != nil && head.Data.Actor.Kind == string(api.ActorKindExpiry)
		typ := t.notificationType(e, expired)
		if typ == "" {
			continue
		}
		body, ok := bodies[typ]
		if !ok {
			var err error
			if body, err = payload(typ, head.Time, e.JSON, rec.Execution); err != nil {
				return nil, err
			}
			bodies[typ] = body
		}
		out = append(out, store.Notification{
			ExecutionID: executionID, Sequence: e.Sequence, Target: t.id, URL: t.url,
			Body: body, CreatedAt: at, NextAttempt: at,
		})
	}
	return out, nil
}

// payload is a notification's body: the Standard Webhooks {type, timestamp, data} envelope
// around the event as the log serves it and the execution as of its commit.
func payload(typ string, timestamp api.Timestamp, event []byte, exec api.Execution) ([]byte, error) {
	execJSON, err := json.Marshal(wireExecution(exec))
	if err != nil {
		return nil, err
	}
	type data struct {
		Event     json.RawMessage `json:"event"`
		Execution json.RawMessage `json:"execution"`
	}
	return json.Marshal(struct {
		Type      string        `json:"type"`
		Timestamp api.Timestamp `json:"timestamp"`
		Data      data          `json:"data"`
	}{Type: typ, Timestamp: timestamp, Data: data{event, execJSON}})
}

// wireExecution gives the execution as the API shows it: the required arrays and objects are
// [] and {} rather than null when a record holds none. Marshalling reads the record only, so
// no deep copy is needed.
func wireExecution(e api.Execution) api.Execution {
	if e.RequiredCapabilities == nil {
		e.RequiredCapabilities = []string{}
	}
	if e.EffectiveConfig == nil {
		e.EffectiveConfig = api.JSONObject{}
	}
	return e
}

// messageID is the Standard Webhooks message id: stable across retries (receivers deduplicate
// on it), the same for every receiver of one event. It leaves out the execution id's "exec_"
// prefix (backend/ids.go).
func messageID(executionID string, seq int64) string {
	return fmt.Sprintf("msg_%s_%d", strings.TrimPrefix(executionID, "exec_"), seq)
}

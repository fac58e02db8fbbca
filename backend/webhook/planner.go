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
		}
	}
	if p.wanted[BudgetExceeded] { // carried by a provider.event (budget.go)
		p.wanted[string(api.StandardEventTypeProviderEvent)] = true
	}
	return p
}

// Wants reports whether any target subscribes to events of typ.
func (p *planner) Wants(typ api.StandardEventType) bool { return p.wanted[string(typ)] }

// Committed wakes the sender after a commit that wrote rows.
func (p *planner) Committed() { p.wake() }

// targetsFor returns the targets that want e from executions of tenant, and the type each
// is notified of it as.
func (p *planner) targetsFor(e store.Event, tenant string) ([]*target, []api.StandardEventType) {
	var out []*target
	var types []api.StandardEventType
	for _, t := range p.targets {
		typ := notificationType(e, t.events)
		if t.events[string(typ)] && t.servesTenant(tenant) {
			out = append(out, t)
			types = append(types, typ)
		}
	}
	return out, types
}

// Notifications builds the rows for event e, given the execution as of this commit.
func (p *planner) Notifications(executionID string, e store.Event, rec store.Execution, at time.Time) ([]store.Notification, error) {
	targets, types := p.targetsFor(e, rec.Tenant)
	if len(targets) == 0 {
		return nil, nil
	}
	var head struct {
		Time api.Timestamp `json:"time"`
	}
	if err := json.Unmarshal(e.JSON, &head); err != nil {
		return nil, fmt.Errorf("webhook payload of %s:%d: %w", executionID, e.Sequence, err)
	}
	execJSON, err := json.Marshal(wireExecution(rec.Execution))
	if err != nil {
		return nil, err
	}
	bodies := map[api.StandardEventType][]byte{}
	out := make([]store.Notification, 0, len(targets))
	for i, t := range targets {
		body, ok := bodies[types[i]]
		if !ok {
			body, err = json.Marshal(struct {
				Type      api.StandardEventType `json:"type"`
				Timestamp api.Timestamp         `json:"timestamp"`
				Data      struct {
					Event     json.RawMessage `json:"event"`
					Execution json.RawMessage `json:"execution"`
				} `json:"data"`
			}{Type: types[i], Timestamp: head.Time, Data: struct {
				Event     json.RawMessage `json:"event"`
				Execution json.RawMessage `json:"execution"`
			}{e.JSON, execJSON}})
			if err != nil {
				return nil, err
			}
			bodies[types[i]] = body
		}
		out = append(out, store.Notification{
			ExecutionID: executionID, Sequence: e.Sequence, Target: t.id, URL: t.url,
			Body: body, CreatedAt: at, NextAttempt: at,
		})
	}
	return out, nil
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

package caddymodule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Approvals' settings (docs/protocol.md, "Approvals"): how long an action may wait for an
// answer before it expires (per provider), and standing rules of the configuration. Read when
// the runtime is opened, like webhooks.

// ActionRule is a standing rule of the configuration: it answers matching approvals of the
// tenants it names (none: every tenant) at once, and cannot be revoked through the API.
type ActionRule struct {
	Tenants    []string `json:"tenants,omitempty"`
	ProviderID string   `json:"provider,omitempty"`
	ToolKind   string   `json:"tool_kind,omitempty"`
	// Title is a pattern over the whole title: * is any run of characters.
	Title string `json:"title,omitempty"`
	// Decision is approve or reject.
	Decision string `json:"decision"`
	// Message is what the agent is told with each answer (a reject's reason).
	Message string `json:"message,omitempty"`
}

// approvalOptions is the runtime's form of the settings.
func (h *Harness) approvalOptions() backend.ApprovalOptions {
	var o backend.ApprovalOptions
	for id, d := range h.ActionTimeouts {
		if o.Timeouts == nil {
			o.Timeouts = map[string]time.Duration{}
		}
		if id == "*" {
			id = ""
		}
		o.Timeouts[id] = time.Duration(d)
	}
	for _, r := range h.ActionRules {
		rule := api.CreateActionRuleRequest{Decision: api.RuleDecision(r.Decision), Message: optional(r.Message)}
		rule.Match = api.ActionRuleMatch{ProviderID: optional(r.ProviderID), ToolKind: optional(r.ToolKind), Title: optional(r.Title)}
		o.Rules = append(o.Rules, backend.ConfiguredRule{Tenants: r.Tenants, Rule: rule})
	}
	return o
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h *Harness) checkApprovals() error {
	for id, d := range h.ActionTimeouts {
		if d <= 0 || time.Duration(d) > backend.MaxActionTimeout {
			return fmt.Errorf("action_timeout of %q is %s: it must be more than 0 and at most %s", id, time.Duration(d), backend.MaxActionTimeout)
		}
	}
	for i, r := range h.ActionRules {
		if r.Decision != "approve" && r.Decision != "reject" {
			return fmt.Errorf("action_rule %d: decision must be approve or reject, got %q", i+1, r.Decision)
		}
	}
	return nil
}

// approvalSettings is the settings as comparable JSON (runtimeSettings).
func (h *Harness) approvalSettings() string {
	if len(h.ActionTimeouts) == 0 && len(h.ActionRules) == 0 {
		return ""
	}
	raw, _ := json.Marshal(h.approvalOptions())
	return string(raw)
}

func decodeApprovals(raw string) backend.ApprovalOptions {
	var o backend.ApprovalOptions
	if raw != "" {
		json.Unmarshal([]byte(raw), &o) // written by approvalSettings
	}
	return o
}

// parseActionTimeout reads `action_timeout [<provider>] <duration>`: without a provider, the
// default of every provider.
func (h *Harness) parseActionTimeout(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	provider, value := "*", ""
	switch len(args) {
	case 1:
		value = args[0]
	case 2:
		provider, value = args[0], args[1]
	default:
		return d.ArgErr()
	}
	dur, err := caddy.ParseDuration(value)
	if err != nil {
		return d.Errf("action_timeout %s: %v", value, err)
	}
	if h.ActionTimeouts == nil {
		h.ActionTimeouts = map[string]caddy.Duration{}
	}
	h.ActionTimeouts[provider] = caddy.Duration(dur)
	return nil
}

// parseActionRule reads
//
//	action_rule {
//		tenants   <name>...
//		provider  <id>
//		tool_kind <kind>
//		title     <pattern>
//		decision  approve|reject
//		message   <text>
//	}
func (h *Harness) parseActionRule(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	var r ActionRule
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		setting := d.Val()
		var into *string
		switch setting {
		case "tenants":
			if r.Tenants = d.RemainingArgs(); len(r.Tenants) == 0 {
				return d.ArgErr()
			}
			continue
		case "provider":
			into = &r.ProviderID
		case "tool_kind":
			into = &r.ToolKind
		case "title":
			into = &r.Title
		case "decision":
			into = &r.Decision
		case "message":
			into = &r.Message
		default:
			return d.Errf("unrecognized action_rule setting %q", setting)
		}
		if !d.AllArgs(into) {
			return d.ArgErr()
		}
	}
	if r.Decision == "" {
		return d.Err("action_rule: decision (approve or reject) is required")
	}
	h.ActionRules = append(h.ActionRules, r)
	return nil
}

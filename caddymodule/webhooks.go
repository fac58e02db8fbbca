package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend/webhook"
)

// Webhook is one webhook subscription (docs/webhooks.md): the runtime POSTs a signed Standard
// Webhooks notification to URL for every event of the listed types. Subscriptions are trusted
// configuration, per data directory: a start request cannot add one.
type Webhook struct {
	// http or https URL of the receiver.
	URL string `json:"url"`
	// Event types sent. Default: action.required, run.completed, run.failed, run.cancelled.
	Events []string `json:"events,omitempty"`
	// Signing secret, "whsec_" + base64 of 24 to 64 random bytes. Placeholders are replaced
	// when the handler is provisioned, so the secret can stay out of the config:
	// "{env.HARNESS_WEBHOOK_SECRET}".
	Secret string `json:"secret"`
	// Tenants limits the subscription to these tenants' executions (the names the tenant
	// setting gives). Default: every tenant's, which suits the operator's own receiver.
	Tenants []string `json:"tenants,omitempty"`
}

func (h *Harness) checkWebhooks() error {
	for i, w := range h.Webhooks {
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("webhook %d: url must be an absolute http or https URL, got %q", i+1, w.URL)
		}
		if w.Secret == "" {
			return fmt.Errorf("webhook %d (%s): secret is required", i+1, u.Host)
		}
	}
	return nil
}

// resolvedWebhooks replaces placeholders in the secrets and checks them; the result is JSON so
// that it can be part of the comparable runtimeSettings (the secret only lives in memory).
func (h *Harness) resolvedWebhooks() (string, error) {
	if len(h.Webhooks) == 0 {
		return "", nil
	}
	repl := caddy.NewReplacer()
	subs := make([]webhook.Subscription, len(h.Webhooks))
	for i, w := range h.Webhooks {
		secret := repl.ReplaceKnown(w.Secret, "")
		if _, err := webhook.ParseSecret(secret); err != nil {
			return "", fmt.Errorf("webhook %d: %w (after replacing placeholders)", i+1, err)
		}
		subs[i] = webhook.Subscription{URL: w.URL, Events: w.Events, Secret: secret, Tenants: w.Tenants}
	}
	raw, err := json.Marshal(subs)
	return string(raw), err
}

func decodeWebhooks(raw string) []webhook.Subscription {
	if raw == "" {
		return nil
	}
	var subs []webhook.Subscription
	json.Unmarshal([]byte(raw), &subs) // written by resolvedWebhooks
	return subs
}

// parseWebhook reads
//
//	webhook <url> {
//		events <type>...
//		secret <secret or placeholder>
//		tenants <name>...
//	}
func (h *Harness) parseWebhook(d *caddyfile.Dispenser) error {
	var w Webhook
	if !d.NextArg() {
		return d.ArgErr()
	}
	w.URL = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "events":
			w.Events = d.RemainingArgs()
			if len(w.Events) == 0 {
				return d.ArgErr()
			}
		case "secret":
			if !d.AllArgs(&w.Secret) {
				return d.ArgErr()
			}
		case "tenants":
			w.Tenants = d.RemainingArgs()
			if len(w.Tenants) == 0 {
				return d.ArgErr()
			}
		default:
			return d.Errf("unrecognized webhook setting %q", d.Val())
		}
	}
	if w.Secret == "" {
		return d.Errf("webhook %s: secret is required", w.URL)
	}
	h.Webhooks = append(h.Webhooks, w)
	return nil
}

package caddymodule

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/harness-edge/harness-edge/proxy"
)

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Harness)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	harness [<matcher>] {
//		store <backend> [<args>] [{
//			<store settings>
//		}]
//		data_dir       <path>
//		heartbeat      <duration>
//		max_body_size  <size>
//		cancel_timeout <duration>
//		retention      <duration>
//		stream_retention <duration>
//		max_events     <count>
//		max_event_bytes <size>
//		webhook <url> {
//			events <type>...
//			secret <whsec_… or a placeholder>
//			tenants <name>...
//		}
//		action_timeout [<provider>] <duration>
//		action_rule {
//			tenants <name>...
//			provider <id>
//			tool_kind <kind>
//			title <pattern>
//			decision approve|reject
//			message <text>
//		}
//		console        [<path prefix>]
//		tenant         <placeholder>
//		identity       <placeholder>
//		max_running    <n>
//		budget <tenant|*> [<provider>] {
//			tokens <n> per day|month
//			cost <amount> <currency> per day|month
//			reserve <n> | <amount> <currency>
//			max_running <n>
//			on_exceed cancel|finish
//		}
//		allowed_origins <origin...>
//		provider <name> [<id>] [{
//			<provider settings>
//		}]
//	}
//
// store names where executions are kept: `store bolt <dir>` or `store bolt { path <dir> }`
// (the default, in {caddy.AppDataDir}/harness), or another module of harness.stores.
// data_dir <dir> is the older spelling of store bolt <dir>; give one of them.
// console turns the web console on, at /console/ unless a prefix is given.
// webhook may be repeated (docs/webhooks.md); so may action_timeout (one per provider) and
// action_rule (docs/protocol.md, "Approvals"). provider may be repeated; the order is the order the runtime describes the providers in.
// Every setting is optional; see the Harness fields for the defaults.
func (m *Harness) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch setting := d.Val(); setting {
		case "data_dir":
			if !d.AllArgs(&m.DataDir) {
				return d.ArgErr()
			}
			if m.StoreRaw != nil {
				return d.Err("data_dir and store both name the store: data_dir <dir> is store bolt <dir>, give one of them")
			}

		case "store":
			if err := m.parseStore(d); err != nil {
				return err
			}

		case "heartbeat", "cancel_timeout", "retention", "stream_retention":
			dur, err := durationArg(d, setting)
			if err != nil {
				return err
			}
			switch setting {
			case "heartbeat":
				m.Heartbeat = caddy.Duration(dur)
			case "cancel_timeout":
				m.CancelTimeout = caddy.Duration(dur)
			case "retention":
				m.Retention = caddy.Duration(dur)
			case "stream_retention":
				m.StreamRetention = caddy.Duration(dur)
			}

		case "max_body_size":
			size, err := sizeArg(d, setting, math.MaxInt64)
			if err != nil {
				return err
			}
			m.MaxBodySize = int64(size)

		case "max_events":
			n, err := countArg(d, setting)
			if err != nil {
				return err
			}
			m.MaxEvents = n

		case "max_event_bytes":
			size, err := sizeArg(d, setting, math.MaxInt64)
			if err != nil {
				return err
			}
			m.MaxEventBytes = int64(size)

		case "webhook":
			if err := m.parseWebhook(d); err != nil {
				return err
			}
		case "action_timeout":
			if err := m.parseActionTimeout(d); err != nil {
				return err
			}
		case "action_rule":
			if err := m.parseActionRule(d); err != nil {
				return err
			}

		case "budget":
			if err := m.parseBudget(d); err != nil {
				return err
			}

		case "console":
			if err := m.parseConsole(d); err != nil {
				return err
			}

		case "tenant":
			if !d.AllArgs(&m.Tenant) {
				return d.ArgErr()
			}

		case "identity":
			if !d.AllArgs(&m.Identity) {
				return d.ArgErr()
			}

		case "max_running":
			var raw string
			if !d.AllArgs(&raw) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(raw)
			if err != nil || n < 0 {
				return d.Errf("max_running: %q is not a non-negative integer", raw)
			}
			m.MaxRunning = n

		case "allowed_origins":
			// Repeatable. Placeholders are not expanded here, so an origin is checked as written.
			origins := d.RemainingArgs()
			if len(origins) == 0 {
				return d.ArgErr()
			}
			for _, origin := range origins {
				if _, err := proxy.NormalizeOrigin(origin); err != nil {
					return d.Errf("%s: %v", setting, err)
				}
			}
			m.AllowedOrigins = append(m.AllowedOrigins, origins...)

		case "provider":
			if !d.NextArg() {
				return d.ArgErr()
			}
			name := d.Val()
			unm, err := caddyfile.UnmarshalModule(d, "harness.providers."+name)
			if err != nil {
				return err
			}
			_, isSet := unm.(ProviderSet)
			if _, ok := unm.(ProviderModule); !ok && !isSet {
				return d.Errf("module harness.providers.%s is not a provider", name)
			}
			var warnings []caddyconfig.Warning
			raw := caddyconfig.JSONModuleObject(unm, "provider", name, &warnings)
			if len(warnings) > 0 {
				return d.Errf("provider %s: %s", name, warnings[0].Message)
			}
			m.ProvidersRaw = append(m.ProvidersRaw, json.RawMessage(raw))

		default:
			return d.Errf("unrecognized harness setting %q", setting)
		}
	}
	return nil
}

// parseStore parses `store <backend> …` into StoreRaw, with the module's own Caddyfile syntax.
func (m *Harness) parseStore(d *caddyfile.Dispenser) error {
	if m.StoreRaw != nil {
		return d.Err("store given twice")
	}
	if m.DataDir != "" {
		return d.Err("data_dir and store both name the store: data_dir <dir> is store bolt <dir>, give one of them")
	}
	if !d.NextArg() {
		return d.ArgErr()
	}
	name := d.Val()
	unm, err := caddyfile.UnmarshalModule(d, "harness.stores."+name)
	if err != nil {
		return err
	}
	if _, ok := unm.(StoreModule); !ok {
		return d.Errf("module harness.stores.%s is not a store", name)
	}
	var warnings []caddyconfig.Warning
	raw := caddyconfig.JSONModuleObject(unm, "backend", name, &warnings)
	if len(warnings) > 0 {
		return d.Errf("store %s: %s", name, warnings[0].Message)
	}
	m.StoreRaw = raw
	return nil
}

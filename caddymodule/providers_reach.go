package caddymodule

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// agentConnection holds the settings of every provider that reaches a remote agent over HTTP
// (a2a, remote): how it authenticates and how long one call may take. Each such provider embeds
// it, so its JSON keys and Caddyfile settings are the same everywhere and are parsed once.
type agentConnection struct {
	// BearerToken is sent as "Authorization: Bearer …" to the agent.
	BearerToken string `json:"bearer_token,omitempty"`
	// Headers are added to every request to the agent.
	Headers map[string]string `json:"headers,omitempty"`
	// RequestTimeout bounds each call to the agent other than event streams. Default 30s.
	RequestTimeout caddy.Duration `json:"request_timeout,omitempty"`
}

// unmarshalSetting parses one of agentConnection's Caddyfile settings (bearer_token, header,
// request_timeout); known is false for any other setting, which the provider parses itself.
func (c *agentConnection) unmarshalSetting(d *caddyfile.Dispenser, setting string) (known bool, err error) {
	switch setting {
	case "bearer_token":
		return true, stringArg(d, &c.BearerToken)
	case "header":
		return true, namedValueArg(d, setting, &c.Headers)
	case "request_timeout":
		return true, durationSetting(d, setting, &c.RequestTimeout)
	}
	return false, nil
}

// resolved is the connection with Caddy's placeholders ({env.TOKEN}) replaced.
func (c agentConnection) resolved(repl *caddy.Replacer) (bearerToken string, headers map[string]string, requestTimeout time.Duration) {
	return repl.ReplaceKnown(c.BearerToken, ""), replacedValues(repl, c.Headers), time.Duration(c.RequestTimeout)
}

package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestA2AProviderCaddyfile(t *testing.T) {
	var m A2AProvider
	err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`a2a helper {
		url             https://agent.internal/.well-known/agent-card.json
		bearer_token    {env.A2A_TOKEN}
		header          X-Tenant acme
		card_timeout    2s
		request_timeout 10s
		gone_timeout    1m
		poll_interval   500ms
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := A2AProvider{ID: "helper", URL: "https://agent.internal/.well-known/agent-card.json",
		agentConnection: agentConnection{BearerToken: "{env.A2A_TOKEN}", Headers: map[string]string{"X-Tenant": "acme"},
			RequestTimeout: caddy.Duration(10 * time.Second)},
		CardTimeout: caddy.Duration(2 * time.Second), GoneTimeout: caddy.Duration(time.Minute),
		PollInterval: caddy.Duration(500 * time.Millisecond)}
	if m.ID != want.ID || m.URL != want.URL || m.BearerToken != want.BearerToken || m.Headers["X-Tenant"] != "acme" ||
		m.CardTimeout != want.CardTimeout || m.RequestTimeout != want.RequestTimeout || m.GoneTimeout != want.GoneTimeout ||
		m.PollInterval != want.PollInterval {
		t.Fatalf("parsed %+v\nwant %+v", m, want)
	}
	// The shared connection settings keep their JSON keys at the provider's top level.
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"bearer_token":"{env.A2A_TOKEN}"`, `"headers":{"X-Tenant":"acme"}`, `"request_timeout":10000000000`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("JSON %s lacks %s", raw, key)
		}
	}
	var back A2AProvider
	if err := json.Unmarshal(raw, &back); err != nil || back.BearerToken != m.BearerToken || back.RequestTimeout != m.RequestTimeout {
		t.Errorf("JSON round trip: %+v, %v", back, err)
	}

	for input, wantErr := range map[string]string{
		"a2a {\n bearer_token x\n}":                             "needs the agent's URL",
		"a2a {\n url http://a\n shout loud\n}":                  "unrecognized a2a provider setting",
		"a2a {\n url http://a b\n}":                             "wrong argument count",
		"a2a {\n url http://a\n poll_interval soon\n}":          "poll_interval",
		"a2a {\n url http://a\n header X-A 1\n header X-A 2\n}": "set twice",
		"a2a one two {\n url http://a\n}":                       "wrong argument count",
	} {
		var m A2AProvider
		err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", input, err, wantErr)
		}
	}
}

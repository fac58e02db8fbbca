package a2a

import (
	"strings"
	"testing"
)

// Cards of either shape: the interface spoken is JSON-RPC in A2A 1.x, else in 0.3.x; a card
// offering neither is refused, naming what it offers.
func TestChooseInterface(t *testing.T) {
	for _, tc := range []struct {
		name, json      string
		url, version    string // the interface chosen
		wantErr         string
		wantDecodeError bool
	}{
		{name: "0.3 card", json: `{"protocolVersion":"0.3.0","url":"http://a/rpc","preferredTransport":"JSONRPC"}`,
			url: "http://a/rpc", version: "0.3.0"},
		{name: "0.3 card, JSON-RPC by default", json: `{"protocolVersion":"0.3.0","url":"http://a/rpc"}`,
			url: "http://a/rpc", version: "0.3.0"},
		{name: "0.3 card without a version", json: `{"url":"http://a/rpc"}`, url: "http://a/rpc", version: "0.3"},
		{name: "0.3 card, JSON-RPC among additionalInterfaces",
			json: `{"protocolVersion":"0.3.0","url":"a:443","preferredTransport":"GRPC","additionalInterfaces":[{"transport":"JSONRPC","url":"http://a/rpc"}]}`,
			url:  "http://a/rpc", version: "0.3.0"},
		{name: "0.3 card, gRPC only", json: `{"protocolVersion":"0.3.0","url":"a:443","preferredTransport":"GRPC"}`,
			wantErr: "the card offers GRPC (A2A 0.3.0); this provider speaks A2A 1.0 and 0.3 over JSON-RPC"},
		{name: "0.2 card", json: `{"protocolVersion":"0.2.5","url":"http://a/rpc","preferredTransport":"JSONRPC"}`,
			wantErr: "the card offers JSONRPC (A2A 0.2.5);"},
		{name: "1.0 card", json: `{"supportedInterfaces":[{"url":"http://a/v1","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			url: "http://a/v1", version: "1.0"},
		{name: "1.0 preferred, whatever the order",
			json: `{"supportedInterfaces":[{"url":"http://a/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"http://a/v1","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			url:  "http://a/v1", version: "1.0"},
		{name: "0.3 taken when 1.0 is not over JSON-RPC",
			json: `{"supportedInterfaces":[{"url":"a:443","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://a/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
			url:  "http://a/v03", version: "0.3"},
		{name: "a later 1.x", json: `{"supportedInterfaces":[{"url":"http://a/v1","protocolBinding":"JSONRPC","protocolVersion":"1.1"}]}`,
			url: "http://a/v1", version: "1.1"},
		{name: "a compatible agent's union card: its supportedInterfaces count",
			json: `{"protocolVersion":"0.3","url":"http://a/rpc","preferredTransport":"JSONRPC","supportedInterfaces":[{"url":"http://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"http://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`,
			url:  "http://a/rpc", version: "1.0"},
		{name: "neither version over JSON-RPC",
			json:    `{"supportedInterfaces":[{"url":"a:443","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://a/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},{"url":"http://a/v2","protocolBinding":"JSONRPC","protocolVersion":"2.0"},{"url":"http://a/x","protocolBinding":"JSONRPC"}]}`,
			wantErr: "the card offers GRPC (A2A 1.0), HTTP+JSON (A2A 1.0), JSONRPC (A2A 2.0), JSONRPC (no protocolVersion);"},
		{name: "no interface at all", json: `{"name":"x"}`, wantErr: "the card lists no interface"},
		{name: "not a card", json: `["x"]`, wantDecodeError: true},
	} {
		card, err := decodeCard([]byte(tc.json))
		if tc.wantDecodeError {
			if err == nil {
				t.Errorf("%s: decoded %+v, want an error", tc.name, card)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: decode: %v", tc.name, err)
			continue
		}
		iface, err := chooseInterface(card)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case iface.URL != tc.url || string(iface.ProtocolVersion) != tc.version || iface.ProtocolBinding != "JSONRPC":
			t.Errorf("%s: chose %s %s at %s, want JSONRPC %s at %s", tc.name, iface.ProtocolBinding, iface.ProtocolVersion, iface.URL, tc.version, tc.url)
		}
	}
}

// Whatever an agent (or something in its place) answers as its card, reading it fails or picks
// an interface the provider speaks; it never panics.
func FuzzDecodeCard(f *testing.F) {
	f.Add(`{"protocolVersion":"0.3.0","url":"http://a/rpc"}`)
	f.Add(`{"supportedInterfaces":[{"url":"http://a/v1","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`)
	f.Add(`{"supportedInterfaces":[null,{"url":""}],"additionalInterfaces":[{"transport":"JSONRPC"}]}`)
	f.Add(`{"url":"http://a","securitySchemes":{"k":{"apiKeySecurityScheme":{}}}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		card, err := decodeCard([]byte(raw))
		if err != nil {
			return
		}
		iface, err := chooseInterface(card)
		if err != nil {
			return
		}
		if iface.URL == "" || iface.ProtocolBinding != "JSONRPC" || !isProtocol1(iface.ProtocolVersion) && !isProtocol03(iface.ProtocolVersion) {
			t.Fatalf("chose %+v from %s", iface, raw)
		}
	})
}

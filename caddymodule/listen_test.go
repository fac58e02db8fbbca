package caddymodule

import (
	"slices"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddytls"
)

func TestHandlerURLs(t *testing.T) {
	h, other := new(Harness), new(Harness)
	app := &caddyhttp.App{Servers: map[string]*caddyhttp.Server{
		"loopback": {
			Listen: []string{"127.0.0.1:4310"},
			Routes: caddyhttp.RouteList{{Handlers: []caddyhttp.MiddlewareHandler{h}}},
		},
		"public": {
			Listen:          []string{":443"},
			TLSConnPolicies: caddytls.ConnectionPolicies{{}},
			Routes: caddyhttp.RouteList{{
				MatcherSets: caddyhttp.MatcherSets{{caddyhttp.MatchHost{"harness.example.com"}}},
				Handlers: []caddyhttp.MiddlewareHandler{&caddyhttp.Subroute{Routes: caddyhttp.RouteList{
					{Handlers: []caddyhttp.MiddlewareHandler{h}},
				}}},
			}},
		},
		"local-tls": {
			Listen:          []string{"127.0.0.1:4311"},
			TLSConnPolicies: caddytls.ConnectionPolicies{{}},
			Routes: caddyhttp.RouteList{{
				MatcherSets: caddyhttp.MatcherSets{{&caddyhttp.MatchHost{"localhost"}}},
				Handlers:    []caddyhttp.MiddlewareHandler{h},
			}},
		},
		"someone else's": {
			Listen: []string{":8080"},
			Routes: caddyhttp.RouteList{{Handlers: []caddyhttp.MiddlewareHandler{other}}},
		},
	}}
	want := []string{"http://127.0.0.1:4310", "https://harness.example.com", "https://localhost:4311"}
	if got := handlerURLs(app, h); !slices.Equal(got, want) {
		t.Fatalf("urls %v, want %v", got, want)
	}
}

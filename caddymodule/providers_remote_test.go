package caddymodule

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestRemoteProviderThroughCaddy loads Caddy with a remote provider whose upstream is not up
// yet: the config loads anyway (after manifest_timeout) and lists a stand-in manifest; once the
// upstream (our runtime on loopback) answers, its manifest is registered without a reload, and
// an execution with an approval runs through Caddy and the upstream.
func TestRemoteProviderThroughCaddy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstreamURL := "http://" + l.Addr().String()
	l.Close() // nothing listens there while Caddy loads

	loadCaddyfile(t, `
http://localhost:9080 {
	harness {
		data_dir `+t.TempDir()+`
		provider remote mock {
			upstream `+upstreamURL+`
			manifest_timeout 300ms
			header X-Edge {env.HARNESS_TEST_EDGE_NAME}
		}
	}
}
`)
	c := newClient(t, httpURL, nil)
	var caps struct{ Providers []api.ProviderManifest }
	c.do(http.MethodGet, "/v1/runtime/capabilities", nil, http.StatusOK, &caps)
	if len(caps.Providers) != 1 || caps.Providers[0].ID != "mock" || len(caps.Providers[0].Capabilities) != 0 {
		t.Fatalf("stand-in manifest: %+v", caps.Providers)
	}

	startUpstreamAt(t, l.Addr().String())
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.do(http.MethodGet, "/v1/runtime/capabilities", nil, http.StatusOK, &caps)
		if len(caps.Providers[0].Capabilities) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upstream's manifest was never registered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := caps.Providers[0]; m.Topologies[0] != api.RuntimeTopologyRemote || m.Capabilities["action.approval"] != api.SupportLevelNative {
		t.Fatalf("manifest %+v", m)
	}

	client, err := sdk.New(httpURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conv, err := client.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "through the edge",
		Config: api.JSONObject{"requireApproval": true}},
		sdk.RunHandlers{OnAction: func(context.Context, api.ActionRequest) (api.ActionResponse, error) {
			return api.ActionResponse{Approved: new(true)}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded() || res.Output != "Echo: through the edge" {
		t.Fatalf("%s %q %+v", res.Execution.State, res.Output, res.Execution.Error)
	}
}

// startUpstreamAt serves our runtime with the mock provider on addr.
func startUpstreamAt(t *testing.T, addr string) {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(func() {
		h.Shutdown()
		srv.Close()
		_ = rt.Close()
	})
}

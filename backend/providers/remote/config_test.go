package remote_test

import (
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend/providers/remote"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestConfigErrors(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		cfg  remote.Config
		want string
	}{
		"no URL":             {remote.Config{}, "want http(s)://host"},
		"bad scheme":         {remote.Config{UpstreamURL: "ftp://x"}, "want http(s)://host"},
		"credentials in URL": {remote.Config{UpstreamURL: "http://u:p@x"}, "without credentials"},
		"id alone":           {remote.Config{UpstreamURL: "http://x", ID: "a"}, "set upstream_provider too"},
		"negative timeout":   {remote.Config{UpstreamURL: "http://x", GoneTimeout: -time.Second}, "must not be negative"},
		"multi-line token":   {remote.Config{UpstreamURL: "http://x", BearerToken: "a\nb"}, "single line"},
		"missing CA file":    {remote.Config{UpstreamURL: "http://x", CAFile: "/nonexistent/ca.pem"}, "ca_file"},
		"CA file not PEM":    {remote.Config{UpstreamURL: "http://x", CAFile: notPEM}, "no PEM certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := remote.New(tc.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestUpstreamOverTLSWithCustomCA: an HTTPS upstream whose certificate only ca_file vouches
// for is trusted with it and refused without it; the bearer token and headers reach it.
func TestUpstreamOverTLSWithCustomCA(t *testing.T) {
	u := startUpstreamServer(t, true)
	caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw})
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	untrusted, err := remote.New(remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock", ManifestTimeout: 300 * time.Millisecond, Retry: fastRetry}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := untrusted.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	untrusted.Close()
	if m := untrusted.Providers()[0].Manifest(); len(m.Capabilities) != 0 {
		t.Fatalf("an upstream with an untrusted certificate was read: %+v", m)
	}

	e := startEdge(t, t.TempDir(), remote.Config{UpstreamURL: u.url, UpstreamProvider: "mock", CAFile: caFile,
		BearerToken: "t0ken", Headers: map[string]string{"X-Tenant": "acme"}})
	if m := e.rt.Capabilities(); len(m[0].Capabilities) == 0 {
		t.Fatalf("manifest over TLS not read: %+v", m)
	}
	exec := e.start(t, "over tls", nil)
	events := allEvents(t, e.client, exec.ID)
	if last := events[len(events)-1]; last.Type != api.StandardEventTypeRunCompleted || typed(last.Data.AsRunCompletedData()).FinalOutput != "Echo: over tls" {
		t.Fatalf("last event %s %v", last.Type, last.Data)
	}
	if got := u.lastHeader("Authorization"); got != "Bearer t0ken" {
		t.Errorf("Authorization %q", got)
	}
	if got := u.lastHeader("X-Tenant"); got != "acme" {
		t.Errorf("X-Tenant %q", got)
	}
}

package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/proxy"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// These tests check that harnessctl explains what went wrong in words a newcomer can act on.

// ctlEnv runs harnessctl in-process with the environment env (nothing else is set).
func ctlEnv(t *testing.T, env map[string]string, args ...string) *session {
	t.Helper()
	s := &session{}
	a := &app{
		stdin:      strings.NewReader(""),
		stdout:     &s.stdout,
		stderr:     &s.stderr,
		getenv:     func(k string) string { return env[k] },
		interrupts: func() (<-chan os.Signal, func()) { return make(chan os.Signal), func() {} },
	}
	s.code = a.main(args)
	return s
}

// serveHandler serves the real API through wrap (authentication in front, a server without
// the listing extension).
func serveHandler(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	h := proxy.New(rt, proxy.Options{RetryHint: time.Millisecond})
	hs := httptest.NewServer(wrap(h))
	t.Cleanup(func() {
		h.Shutdown()
		hs.Close()
		_ = rt.Close()
	})
	return hs.URL
}

func wantStderr(t *testing.T, s *session, code int, has []string, hasNot []string) {
	t.Helper()
	s.expect(t, code)
	for _, want := range has {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, s.stderr.String())
		}
	}
	for _, not := range hasNot {
		if strings.Contains(s.stderr.String(), not) {
			t.Errorf("stderr has %q:\n%s", not, s.stderr.String())
		}
	}
}

// TestConnectionRefusedIsExplained: nothing listens at the base URL. harnessctl says so at the
// first refusal (the SDK then retries for a few seconds) and ends saying how to start a server
// or point at one, not with a raw "dial tcp".
func TestConnectionRefusedIsExplained(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	s := ctlEnv(t, map[string]string{"HARNESS_URL": base}, "runtime")
	wantStderr(t, s, exitError,
		[]string{"nothing answers at " + strings.TrimPrefix(base, "http://") + " (connection refused); retrying (Ctrl-C stops)",
			"nothing answers at " + base + ": the connection was refused", "make run", "--base URL or $HARNESS_URL"},
		[]string{"dial tcp"})
}

// TestBadJSONFlagShowsWhere: a --config the shell stripped of its quotes is shown with the
// parser's error and a caret under the place, without the usage dump.
func TestBadJSONFlagShowsWhere(t *testing.T) {
	s := ctlEnv(t, nil, "run", "--config", "{requireApproval:true}", "x")
	wantStderr(t, s, exitUsage,
		[]string{"--config is not valid JSON: invalid character 'r' looking for beginning of object key string (line 1, column 2)",
			"  {requireApproval:true}\n   ^\n", `--config '{"requireApproval":true}'`, "Run 'harnessctl run --help' for the flags."},
		[]string{"Usage:", "Flags:"})
	s = ctlEnv(t, nil, "conversation", "create", "--metadata", "[1]")
	wantStderr(t, s, exitUsage, []string{"--metadata must be a JSON object, not an array", `'{"key":"value"}'`}, []string{"Usage:"})
}

// TestUserSendsBasicAuth: --user and $HARNESS_USER authenticate to a server behind basic
// authentication (as examples/public.Caddyfile puts it); credentials in the URL, a user without
// a password, and a user together with a token are refused with a reason.
func TestUserSendsBasicAuth(t *testing.T) {
	base := serveHandler(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if user, password, ok := r.BasicAuth(); !ok || user != "alice" || password != "s3cret:x" {
				w.Header().Set("WWW-Authenticate", `Basic realm="harness"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ctlEnv(t, map[string]string{"HARNESS_URL": base}, "--user", "alice:s3cret:x", "runtime").expect(t, exitOK)
	ctlEnv(t, map[string]string{"HARNESS_URL": base, "HARNESS_USER": "alice:s3cret:x"}, "runtime").expect(t, exitOK)
	wantStderr(t, ctlEnv(t, map[string]string{"HARNESS_URL": base}, "--user", "alice:wrong", "runtime"), exitError, []string{"401"}, nil)

	withUser := strings.Replace(base, "http://", "http://alice:s3cret@", 1)
	wantStderr(t, ctlEnv(t, map[string]string{"HARNESS_URL": withUser}, "runtime"), exitUsage,
		[]string{"the base URL carries credentials", "--user NAME:PASSWORD", "$HARNESS_USER"}, []string{"s3cret"})
	wantStderr(t, ctlEnv(t, map[string]string{"HARNESS_URL": base, "HARNESS_USER": "alice"}, "runtime"), exitUsage,
		[]string{"$HARNESS_USER wants NAME:PASSWORD"}, nil)
	wantStderr(t, ctlEnv(t, map[string]string{"HARNESS_URL": base, "HARNESS_TOKEN": "t"}, "--user", "alice:s3cret:x", "runtime"), exitUsage,
		[]string{"--user and $HARNESS_TOKEN are both set"}, nil)
}

// TestLsAgainstAServerWithoutListing: the reference answers its framework's plain-text 404 for
// GET /v1/executions; ls says the server lacks the extension, not that the URL is wrong.
func TestLsAgainstAServerWithoutListing(t *testing.T) {
	base := serveHandler(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && (r.URL.Path == "/v1/executions" || strings.HasSuffix(r.URL.Path, "/executions")) {
				w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte("404 Not Found"))
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	s := ctlEnv(t, map[string]string{"HARNESS_URL": base}, "ls")
	wantStderr(t, s, exitError,
		[]string{"is a Harness Runtime API server without listing", "harness-edge extension that this server lacks", "harnessctl get|watch|events EXECUTION_ID"},
		[]string{"the server's base URL"})
	// A base URL that is not a Harness server at all still gets the wrong-URL hint.
	notHarness := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notHarness.Close)
	wantStderr(t, ctlEnv(t, map[string]string{"HARNESS_URL": notHarness.URL}, "ls"), exitError,
		[]string{"the server's base URL"}, []string{"without listing"})
}

// TestGetShowsThePendingAction: the snapshot's pendingAction is shown with the command that
// answers it.
func TestGetShowsThePendingAction(t *testing.T) {
	base := serve(t)
	c := sdkClient(t, base)
	ctx := context.Background()
	conv, err := c.CreateConversation(ctx, api.CreateConversationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := c.StartExecution(ctx, api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x", Config: api.JSONObject{"requireApproval": true}})
	if err != nil {
		t.Fatal(err)
	}
	actionID := waitForAction(t, c, exec.ID)
	s := ctl(t, base, "", 0, "get", exec.ID)
	s.expect(t, exitOK)
	for _, want := range []string{
		"waiting for:   approval: Approve mock execution",
		"answer with:   harnessctl respond --approve (or --deny) " + exec.ID + " " + actionID,
	} {
		if !strings.Contains(s.stdout.String(), want) {
			t.Errorf("get lacks %q:\n%s", want, s.stdout.String())
		}
	}
}

// TestVersionIsStamped: the values make build passes with -ldflags are what --version prints.
func TestVersionIsStamped(t *testing.T) {
	defer func(v, c string) { buildVersion, buildCommit = v, c }(buildVersion, buildCommit)
	buildVersion, buildCommit = "0.2.0", "0123456789ab-dirty"
	s := ctlEnv(t, nil, "--version")
	s.expect(t, exitOK)
	if got := s.stdout.String(); got != "harnessctl version 0.2.0 (commit 0123456789ab-dirty)\n" {
		t.Errorf("--version printed %q", got)
	}
}

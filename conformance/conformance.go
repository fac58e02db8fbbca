package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Defaults of Options.
const (
	DefaultProviderID     = "mock"
	DefaultInput          = "portable conformance probe"
	DefaultTimeout        = 10 * time.Second
	DefaultCleanupTimeout = 5 * time.Second
)

// Options say which server to check and how.
type Options struct {
	// BaseURL is the server, e.g. "http://127.0.0.1:4310" (a path prefix is kept).
	BaseURL string
	// ProviderID is the provider to probe; default "mock".
	ProviderID string
	// HTTPClient carries every request (TLS settings, proxies); nil means a default client.
	// Leave its Timeout at zero: it would cut event streams. Options.Timeout bounds the probes.
	HTTPClient *http.Client
	// Header is added to every request, e.g. Authorization for a gateway.
	Header http.Header
	// Input is the scenarios' default input; default "portable conformance probe".
	Input string
	// Timeout bounds each scenario probe and each HTTP case; default 10s.
	Timeout time.Duration
	// CleanupTimeout bounds the cancellation of an execution left unfinished; default 5s.
	CleanupTimeout time.Duration
	// Scenarios replaces the reference's six scenarios (see Scenarios) when not nil.
	Scenarios []Scenario
	// SkipHTTPCases leaves out the HTTP-level cases ("http/…").
	SkipHTTPCases bool
	// OnCheck, when set, sees each check as soon as it is decided, in report order.
	OnCheck func(Check)
}

// Check is one named verdict.
type Check struct {
	// Name is stable: "<scenario>/<reference check name>" or "http/<case>"; a skipped scenario
	// or case is reported under its own name ("input", "http/truncated-stream").
	Name    string
	Passed  bool
	Skipped bool
	// Detail says what was seen (on failure), or why the check was skipped.
	Detail string
}

// String is the check's line in harnessctl's output.
func (c Check) String() string {
	verdict := "FAIL"
	switch {
	case c.Skipped:
		verdict = "SKIP"
	case c.Passed:
		verdict = "PASS"
	}
	if c.Detail == "" {
		return verdict + " " + c.Name
	}
	return verdict + " " + c.Name + ": " + c.Detail
}

// Report is the outcome of Run.
type Report struct {
	BaseURL    string
	ProviderID string
	Checks     []Check
}

// Passed reports whether no check failed (skipped ones do not count).
func (r Report) Passed() bool { return r.Failed() == 0 }

// Failed counts the failed checks.
func (r Report) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if !c.Passed && !c.Skipped {
			n++
		}
	}
	return n
}

// PassedCount counts the passed checks.
func (r Report) PassedCount() int {
	n := 0
	for _, c := range r.Checks {
		if c.Passed && !c.Skipped {
			n++
		}
	}
	return n
}

// Summary is the closing line: "N passed, M failed".
func (r Report) Summary() string {
	return fmt.Sprintf("%d passed, %d failed", r.PassedCount(), r.Failed())
}

// Check returns the check named name.
func (r Report) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// Run checks the server. The error is for what kept the suite from starting (a bad base URL, a
// server that does not answer /v1/runtime/capabilities); everything the server does wrong is a
// failed check in the report.
func Run(ctx context.Context, opts Options) (Report, error) {
	opts = opts.withDefaults()
	s, err := newSuite(opts)
	if err != nil {
		return Report{}, err
	}
	defer s.cleanupAll()
	return s.run(ctx)
}

func (o Options) withDefaults() Options {
	if o.ProviderID == "" {
		o.ProviderID = DefaultProviderID
	}
	if o.Input == "" {
		o.Input = DefaultInput
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = DefaultCleanupTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return o
}

// suite is one Run.
type suite struct {
	opts   Options
	sdk    *sdk.Client
	raw    *rawClient
	report Report

	mu      sync.Mutex
	started []string // every execution the suite created, for the final cleanup
}

// retry keeps the SDK's retries short: a conformance run should report a misbehaving server,
// not wait it out.
var retry = sdk.RetryPolicy{MaxAttempts: 3, MinWait: 50 * time.Millisecond, MaxWait: 500 * time.Millisecond, MaxRetryAfter: time.Second}

func newSuite(opts Options) (*suite, error) {
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("conformance: base URL %q: want http(s)://host[:port][/prefix]", opts.BaseURL)
	}
	sdkOpts := []sdk.Option{sdk.WithHTTPClient(opts.HTTPClient), sdk.WithRetry(retry)}
	for name, values := range opts.Header {
		for _, v := range values {
			sdkOpts = append(sdkOpts, sdk.WithHeader(name, v))
		}
	}
	c, err := sdk.New(opts.BaseURL, sdkOpts...)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	return &suite{
		opts:   opts,
		sdk:    c,
		raw:    &rawClient{base: strings.TrimSuffix(opts.BaseURL, "/"), http: opts.HTTPClient, header: opts.Header},
		report: Report{BaseURL: opts.BaseURL, ProviderID: opts.ProviderID},
	}, nil
}

func (s *suite) run(ctx context.Context) (Report, error) {
	manifests, err := s.capabilities(ctx)
	if err != nil {
		return s.report, err
	}
	manifest, found := findManifest(manifests, s.opts.ProviderID)
	run, skipped := selectScenarios(s.opts, manifest, found)
	for _, sc := range run {
		s.runScenario(ctx, sc, manifest, found)
	}
	for _, sk := range skipped {
		s.add(sk)
	}
	if !s.opts.SkipHTTPCases {
		s.runHTTPCases(ctx, manifest, found)
	}
	return s.report, nil
}

// capabilities reads the manifests once, bounded by the probe timeout.
func (s *suite) capabilities(ctx context.Context) ([]api.ProviderManifest, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	manifests, err := s.sdk.ListCapabilities(ctx)
	if err != nil {
		return nil, fmt.Errorf("conformance: GET /v1/runtime/capabilities: %w", err)
	}
	return manifests, nil
}

func findManifest(ms []api.ProviderManifest, id string) (api.ProviderManifest, bool) {
	for _, m := range ms {
		if m.ID == id {
			return m, true
		}
	}
	return api.ProviderManifest{}, false
}

// add records a check and shows it to OnCheck.
func (s *suite) add(c Check) {
	s.report.Checks = append(s.report.Checks, c)
	if s.opts.OnCheck != nil {
		s.opts.OnCheck(c)
	}
}

// started remembers an execution for the final cleanup.
func (s *suite) track(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, id)
}

// cleanupAll cancels every execution the suite started that has not finished, whatever
// happened to the checks (a probe that failed half-way leaves one waiting for approval).
func (s *suite) cleanupAll() {
	s.mu.Lock()
	ids := append([]string(nil), s.started...)
	s.mu.Unlock()
	for _, id := range ids {
		_, _ = s.cancelIfRunning(id)
	}
}

// cancelIfRunning cancels id unless it is terminal, bounded by the cleanup timeout, and returns
// its final snapshot.
func (s *suite) cancelIfRunning(id string) (api.Execution, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CleanupTimeout)
	defer cancel()
	exec, err := s.sdk.GetExecution(ctx, id)
	if err != nil || sdk.IsTerminalState(exec.State) {
		return exec, err
	}
	exec, err = s.sdk.CancelExecution(ctx, id, api.CancelExecutionRequest{Reason: new("Conformance probe stopped")})
	if errors.Is(err, context.DeadlineExceeded) {
		err = errors.New("Conformance cleanup timed out")
	}
	return exec, err
}

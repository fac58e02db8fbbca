package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/harness-edge/harness-edge/sdk"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// client is the SDK client for the chosen server: --cacert trusted, the token of
// $HARNESS_TOKEN or the user of --user/$HARNESS_USER sent, every answer checked by a wireWatch
// so that a wrong base URL or a server that is not running can be explained.
func (a *app) client(g *globals) (*sdk.Client, error) {
	hc, err := a.httpClient(g)
	if err != nil {
		return nil, err
	}
	opts := []sdk.Option{sdk.WithHTTPClient(hc)}
	auth, err := a.credentials(g)
	if err != nil {
		return nil, err
	}
	if auth != "" {
		opts = append(opts, sdk.WithHeader("Authorization", auth))
	}
	a.currentBase = a.baseURL(g)
	if u, err := url.Parse(a.currentBase); err == nil && u.User != nil {
		return nil, &usageProblem{"the base URL carries credentials (" + u.Redacted() + "): URLs end up in " +
			"shell history, logs and error messages. Give the user with --user NAME:PASSWORD or, better, " +
			"$HARNESS_USER, and the URL without them"}
	}
	return sdk.New(a.currentBase, opts...)
}

// credentials is the Authorization header value: basic authentication for --user (else
// $HARNESS_USER), NAME:PASSWORD as curl takes it, or the bearer token of $HARNESS_TOKEN; ""
// for none. Giving both is refused: the server would see only one.
func (a *app) credentials(g *globals) (string, error) {
	user, from := g.user, "--user"
	if user == "" {
		user, from = a.getenv("HARNESS_USER"), "$HARNESS_USER"
	}
	token := a.getenv("HARNESS_TOKEN")
	switch {
	case user != "" && token != "":
		return "", &usageProblem{from + " and $HARNESS_TOKEN are both set: a request carries one Authorization, give one of them"}
	case token != "":
		return "Bearer " + token, nil
	case user == "":
		return "", nil
	}
	name, password, ok := strings.Cut(user, ":")
	if !ok || name == "" {
		return "", &usageProblem{from + " wants NAME:PASSWORD (basic authentication, as in Caddy's basic_auth), e.g. HARNESS_USER=alice:secret"}
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+password)), nil
}

// usageProblem is a client setting that cannot work, reported by fail with exit code 2.
type usageProblem struct{ message string }

func (u *usageProblem) Error() string { return u.message }

// httpClient is the HTTP client under the SDK (and the conformance suite). It has no Timeout:
// that would cut event streams.
func (a *app) httpClient(g *globals) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if g.cacert != "" {
		pool, err := certPool(g.cacert)
		if err != nil {
			return nil, err
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	if a.wire == nil {
		a.wire = &wireWatch{streams: make(chan struct{}, 1), stderr: a.stderr}
	}
	a.wire.next = transport
	return &http.Client{Transport: a.wire}, nil
}

// certPool is the system's trusted roots plus the certificates of the PEM file.
func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--cacert: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system pool (rare): the file alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--cacert: %s holds no PEM certificate (want -----BEGIN CERTIFICATE-----)", file)
	}
	return pool, nil
}

// wireWatch is the client's transport: it passes everything through, remembers the last answer
// whose media type is not what a Harness server sends (JSON, or text/event-stream for an event
// stream), and signals each event-stream connection on streams (a reconnect, once the first
// connection is open).
type wireWatch struct {
	next       http.RoundTripper
	unexpected atomic.Pointer[unexpectedAnswer]
	streams    chan struct{}
	// stderr gets one line the first time a connection is refused, so that the SDK's retries
	// (a few seconds) are not silent.
	stderr  io.Writer
	refused sync.Once
}

// unexpectedAnswer is an answer that did not come from a Harness Runtime API server.
type unexpectedAnswer struct {
	method, url, status, contentType, want string
}

func (w *wireWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	isStream := req.Header.Get("Accept") == "text/event-stream"
	if isStream {
		select {
		case w.streams <- struct{}{}:
		default:
		}
	}
	resp, err := w.next.RoundTrip(req)
	// Not for event streams: their reconnects run on go-sse's goroutine, while the command may
	// be writing to stderr itself; a command's own calls run on its goroutine.
	if !isStream && errors.Is(err, syscall.ECONNREFUSED) && w.stderr != nil {
		w.refused.Do(func() {
			fmt.Fprintf(w.stderr, "harnessctl: nothing answers at %s (connection refused); retrying (Ctrl-C stops)\n", req.URL.Host)
		})
	}
	if err != nil || resp.StatusCode == http.StatusNoContent {
		return resp, err
	}
	want := "JSON"
	if isStream && resp.StatusCode == http.StatusOK {
		want = "an event stream (text/event-stream)"
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	ok := mt == "application/json" || strings.HasSuffix(mt, "+json")
	if want != "JSON" {
		ok = mt == "text/event-stream"
	}
	if !ok {
		w.unexpected.Store(&unexpectedAnswer{method: req.Method, url: req.URL.Redacted(), status: resp.Status, contentType: ct, want: want})
	}
	return resp, nil
}

// fail reports an error and returns exitError, explaining the usual causes: no server at the
// base URL (connection refused), a base URL that is not a Harness server (an answer that is not
// JSON) and an unknown certificate authority. A client setting that cannot work is exitUsage.
func (a *app) fail(err error) int {
	var usage *usageProblem
	if errors.As(err, &usage) {
		fmt.Fprintf(a.stderr, "harnessctl: %s\n", usage.message)
		return exitUsage
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Fprintf(a.stderr, "harnessctl: nothing answers at %s: the connection was refused, so no server listens there.\n"+
			"harnessctl: start one (in a clone of harness-edge, 'make run' serves %s), or point harnessctl at yours with --base URL or $HARNESS_URL.\n",
			a.currentBase, defaultBase)
		return exitError
	}
	var problem *sdk.Error
	isError := errors.As(err, &problem)
	var unexpected *unexpectedAnswer
	if a.wire != nil && (!isError || problem.Code == sdk.CodeHTTPError) {
		unexpected = a.wire.unexpected.Load()
	}
	if unexpected == nil || isError {
		// The SDK's errors start with "harness: "; once is enough. (A 2xx answer that is not
		// JSON is only said better below.)
		fmt.Fprintf(a.stderr, "harnessctl: %s\n", strings.TrimPrefix(err.Error(), "harness: "))
		if isError {
			a.printFieldErrors(problem)
		}
	}
	if u := unexpected; u != nil {
		ct := "no Content-Type"
		if u.contentType != "" {
			ct = "Content-Type " + u.contentType
		}
		fmt.Fprintf(a.stderr, "harnessctl: %s %s answered %s with %s; a Harness Runtime API server answers %s there.\n"+
			"harnessctl: is %s the server's base URL (--base, else $HARNESS_URL)? 'harnessctl runtime' checks it: GET <base>/v1/runtime answers the runtime's description in JSON.\n",
			u.method, u.url, u.status, ct, u.want, a.currentBase)
	}
	var unknownCA x509.UnknownAuthorityError
	if errors.As(err, &unknownCA) {
		fmt.Fprintln(a.stderr, "harnessctl: the server's certificate is signed by an authority this machine does not trust: "+
			"pass that CA's certificate with --cacert FILE (for Caddy's internal CA see 'harnessctl --help')")
	}
	return exitError
}

// printFieldErrors says which part of the request a VALIDATION_ERROR is about (its details,
// an extension: harness.yaml's ValidationErrorDetails), and what was probably meant.
func (a *app) printFieldErrors(problem *sdk.Error) {
	raw, err := json.Marshal(problem.Details)
	if err != nil {
		return
	}
	var details api.ValidationErrorDetails
	if json.Unmarshal(raw, &details) != nil {
		return
	}
	for _, f := range details.Errors {
		where := ""
		switch {
		case f.Pointer != nil:
			where = "the body's " + *f.Pointer
			if *f.Pointer == "" {
				where = "the body"
			}
		case f.Parameter != nil:
			where = "parameter " + *f.Parameter
		case f.Header != nil:
			where = "header " + *f.Header
		}
		fmt.Fprintf(a.stderr, "harnessctl: %s %s", where, f.Reason)
		if f.Suggestion != nil {
			fmt.Fprintf(a.stderr, " (meant: %s)", *f.Suggestion)
		}
		fmt.Fprintln(a.stderr)
	}
}

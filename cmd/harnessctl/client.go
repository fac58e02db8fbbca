package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/harness-edge/harness-edge/sdk"
)

// client is the SDK client for the chosen server: --cacert trusted, the token of
// $HARNESS_TOKEN sent, every answer checked by a wireWatch so that a wrong base URL can be
// explained.
func (a *app) client(g *globals) (*sdk.Client, error) {
	hc, err := a.httpClient(g)
	if err != nil {
		return nil, err
	}
	opts := []sdk.Option{sdk.WithHTTPClient(hc)}
	if token := a.getenv("HARNESS_TOKEN"); token != "" {
		opts = append(opts, sdk.WithBearerToken(token))
	}
	a.currentBase = a.baseURL(g)
	return sdk.New(a.currentBase, opts...)
}

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
		a.wire = &wireWatch{streams: make(chan struct{}, 1)}
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

// fail reports an error and returns exitError, explaining the usual causes: a base URL that
// is not a Harness server (an answer that is not JSON) and an unknown certificate authority.
func (a *app) fail(err error) int {
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

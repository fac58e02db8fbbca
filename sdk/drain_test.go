package sdk

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Until the stream drains (endless: a stream that goes on after its terminal event), its body is read as it comes; once it drains, at most maxDrainBytes
// more are read, then the read fails and go-sse's Connect returns.
func TestDrainReadsAtMostMaxDrainBytes(t *testing.T) {
	var draining atomic.Bool
	transport := drainLimit{draining: &draining, next: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: endless{[]byte(": keep-alive\n\n")}}, nil
	})}
	resp, err := transport.RoundTrip(&http.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if n, err := io.CopyN(io.Discard, resp.Body, 4*maxDrainBytes); n != 4*maxDrainBytes || err != nil {
		t.Fatalf("before draining: read %d bytes, %v; want %d, nil", n, err, 4*maxDrainBytes)
	}
	draining.Store(true)
	n, err := io.Copy(io.Discard, resp.Body)
	if n != maxDrainBytes || !errors.Is(err, errDrainTooLong) {
		t.Fatalf("draining: read %d bytes, %v; want %d, %v", n, err, maxDrainBytes, errDrainTooLong)
	}
}

// A body that ends within the bound is read to its end (EOF), which is what lets net/http
// reuse the connection.
func TestDrainReadsAShortEndToEOF(t *testing.T) {
	var draining atomic.Bool
	draining.Store(true)
	body := &drainLimitedBody{body: io.NopCloser(strings.NewReader("0\r\n\r\n")), draining: &draining}
	if got, err := io.ReadAll(body); err != nil || string(got) != "0\r\n\r\n" {
		t.Fatalf("read %q, %v; want the whole body and EOF", got, err)
	}
}

package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/hashicorp/go-retryablehttp"
)

// The client's stack, top to bottom:
//
//	http.Client            what the generated client and go-sse call
//	retryingTransport      go-retryablehttp: retries, backoff, Retry-After; reads answers whole
//	http.Client            the caller's (WithHTTPClient) or a pooled one, with its Transport
//	watchdogTransport      per try: cancels it when the server falls silent (watchdog.go)
//	the caller's Transport
//
// Reading a call's answer whole inside the retried round trip is what makes a body cut short
// (a 2xx whose connection dropped after the header) one more failure the retry policy handles,
// like a dropped connection, instead of an "unexpected EOF" in the caller's face. Event streams
// are never read whole: go-sse reads them as they come.

// retryingTransport is retryablehttp.RoundTripper plus a response handler: retryablehttp calls
// it on the answer it would otherwise hand back, and a failure there goes through CheckRetry
// again, so the whole request is tried again within the same policy.
type retryingTransport struct {
	client *retryablehttp.Client
}

func (t *retryingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rreq, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, err
	}
	if !wantsEventStream(req) {
		rreq.SetResponseHandler(readWholeBody)
	}
	resp, err := t.client.Do(rreq)
	if err != nil {
		// PassthroughErrorHandler hands back the last response with the error when the last
		// try's body could not be read; a RoundTripper returns one or the other.
		if resp != nil {
			_ = resp.Body.Close()
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // http.Client wraps it again
		}
		return nil, err
	}
	return resp, nil
}

// cutAnswerError is an answer whose header arrived but whose body could not be read in full.
type cutAnswerError struct {
	status int
	read   int // bytes read before the failure
	err    error
}

func (e *cutAnswerError) Error() string {
	return fmt.Sprintf("the %d answer was cut short after %d bytes of its body: %v", e.status, e.read, e.err)
}

func (e *cutAnswerError) Unwrap() error { return e.err }

// readWholeBody is the response handler: it reads the body into memory, so the generated
// client's parser reads from memory and never fails half-way.
func readWholeBody(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		// retryablehttp drains the body of an answer it retries: leave it nothing to drain.
		resp.Body = http.NoBody
		return &cutAnswerError{status: resp.StatusCode, read: len(body), err: err}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return nil
}

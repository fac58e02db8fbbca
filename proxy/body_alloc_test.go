package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rewindingBody is a request body that can be read again after Reset, so that a test measures
// what readBody allocates, not the making of a body per run.
type rewindingBody struct{ strings.Reader }

func (b *rewindingBody) Close() error { return nil }

// A start's body with a declared length is read into one buffer of exactly that length (plus
// the byte that finds its end): bytes.Buffer.ReadFrom grew its buffer to 512 bytes first, a
// second allocation for every ~150-byte start. The limit reader is the other allocation.
func TestBodyOfDeclaredLengthIsReadIntoOneBuffer(t *testing.T) {
	const text = `{"conversationId":"conv_1","providerId":"mock","input":"hello runtime","config":{"delayMs":0}}`
	body := &rewindingBody{}
	r := httptest.NewRequest(http.MethodPost, "/v1/executions", nil)
	r.Body, r.ContentLength = body, int64(len(text))
	w := httptest.NewRecorder()
	read := func() []byte {
		body.Reset(text)
		got, err := readBody(w, r, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := string(read()); got != text {
		t.Fatalf("read %q, want %q", got, text)
	}
	if allocs := testing.AllocsPerRun(100, func() { read() }); allocs > 2 {
		t.Fatalf("reading a %d-byte body allocated %.0f times; want at most 2", len(text), allocs)
	}
}

// A body shorter than its declared length is an error, as it was (the client left mid-body).
func TestBodyShorterThanDeclaredIsAnError(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/v1/executions", nil)
	r.Body = io.NopCloser(&shortReader{strings.NewReader(`{"input":`)})
	r.ContentLength = 40
	if _, err := readBody(httptest.NewRecorder(), r, 1<<20); err == nil {
		t.Fatal("a body shorter than its Content-Length was read without error")
	}
}

// shortReader ends early the way net/http's body does when the connection closes before the
// declared length: io.ErrUnexpectedEOF.
type shortReader struct{ r io.Reader }

func (s *shortReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

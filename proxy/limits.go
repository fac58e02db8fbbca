package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
)

// readBody reads the whole request body, at most limit bytes. A larger body is a
// *bodyTooLargeError (413) and is not read further: a declared Content-Length over the limit is
// refused before a byte is read, and http.MaxBytesReader stops an undeclared one at the limit
// and makes the server close the connection instead of draining the rest. A body that does not
// arrive before the server's read deadline (Caddy's read_body or read_body_idle timeout, a slow
// or stalled client) is errBodyTimeout (408).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, &bodyTooLargeError{limit: limit}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	// MaxBytesReader tells the server to close the connection through a method of the
	// server's own writer, which it finds by type assertion, not through Unwrap.
	if tw, ok := w.(*trackingWriter); ok {
		w = tw.ResponseWriter
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &bodyTooLargeError{limit: limit}
		}
		if isTimeout(err) {
			return nil, errBodyTimeout
		}
		return nil, err
	}
	return body, nil
}

// readAll reads rd to its end, as bytes.Buffer.ReadFrom would (io.EOF ends it without error,
// any other error is returned), into one buffer of the declared length plus the byte whose read
// finds the end: ReadFrom grows even a buffer of the right size to 512 free bytes before each
// read, a second allocation for every small body. A body longer than declared (or of no
// declared length) goes on in a bytes.Buffer.
func readAll(rd io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 {
		var buf bytes.Buffer
		_, err := buf.ReadFrom(rd)
		return buf.Bytes(), err
	}
	buf := make([]byte, declared+1)
	n := 0
	for n < len(buf) {
		m, err := rd.Read(buf[n:])
		n += m
		if err == io.EOF { //nolint:errorlint // io.Reader's contract: EOF itself, unwrapped
			return buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
	rest := bytes.NewBuffer(buf)
	_, err := rest.ReadFrom(rd)
	return rest.Bytes(), err
}

// isTimeout reports whether a body read failed on the connection's read deadline. HTTP/1 reports
// the socket's deadline as a net.Error whose Timeout() is true; HTTP/2 and Caddy's idle-timeout
// reader report os.ErrDeadlineExceeded.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

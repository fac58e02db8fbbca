package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
)

// TestSlowBodyAnswers408: a client that declares a body and then sends it too slowly meets the
// server's read deadline (http.Server.ReadTimeout here; Caddy's read_body in production). The
// answer is 408 with a VALIDATION_ERROR Problem, not a 500 and not a dropped connection, and
// nothing is started.
func TestSlowBodyAnswers408(t *testing.T) {
	rt, err := local.Open(t.TempDir(), backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	srv := httptest.NewUnstartedServer(New(rt, Options{}))
	srv.Config.ReadTimeout = 500 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	for _, path := range []string{"/v1/conversations", "/v1/executions", "/v1/executions/exec_x:cancel"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), testTimeout)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(testTimeout))
			// 100 bytes announced, one sent; the rest never comes.
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n{", path, srv.Listener.Addr())
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res := result{status: resp.StatusCode, header: resp.Header, body: body}
			requireStatusBody(t, res, http.StatusRequestTimeout,
				`{"code":"VALIDATION_ERROR","message":"Request body was not received in time"}`)
			validateResponse(t, request{method: http.MethodPost, path: path}, res)
		})
	}
}

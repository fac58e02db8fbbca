package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// permissionBody is the rest of valid session/request_permission params after the sessionId.
const permissionBody = `"toolCall":{"toolCallId":"t"},"options":[{"optionId":"o","name":"O","kind":"allow_once"}]`

func TestReadLineLimit(t *testing.T) {
	cases := []struct {
		input string
		limit int
		want  []string // lines read before the end or the error
		err   error
	}{
		{"abc\ndef\n", 3, []string{"abc", "def"}, io.EOF},
		{"abc\r\n", 3, []string{"abc"}, io.EOF},
		{"abcd\n", 3, nil, errMessageTooLarge},
		{"abc", 3, []string{"abc"}, io.EOF},
		{"abcd", 3, nil, errMessageTooLarge},
		{strings.Repeat("x", 70000) + "\n", 70000, []string{strings.Repeat("x", 70000)}, io.EOF}, // beyond one buffer
		{strings.Repeat("x", 70001) + "\n", 70000, nil, errMessageTooLarge},
	}
	for _, tc := range cases {
		r := bufio.NewReaderSize(strings.NewReader(tc.input), 16)
		var got []string
		var err error
		for {
			var line []byte
			line, err = readLine(r, tc.limit)
			if len(line) > 0 {
				got = append(got, string(line))
			}
			if err != nil {
				break
			}
		}
		if !errors.Is(err, tc.err) || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("readLine(%.20q, %d) = %d lines, %v; want %d lines, %v", tc.input, tc.limit, len(got), err, len(tc.want), tc.err)
		}
	}
}

func TestIDKey(t *testing.T) {
	for raw, want := range map[string]string{`7`: "n:7", ` 7 `: "n:7", `"7"`: "s:7", `"a b"`: "s:a b"} {
		if got, ok := idKey([]byte(raw)); !ok || got != want {
			t.Errorf("idKey(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`null`, `true`, `{}`, `[1]`, ``} {
		if _, ok := idKey([]byte(raw)); ok {
			t.Errorf("idKey(%s) accepted a non-id", raw)
		}
	}
}

// inspect classifies inbound lines; a fresh boundary with session "s1" and our request 1
// (session/new) outstanding.
func TestBoundaryInspect(t *testing.T) {
	newWire := func() (*boundary, *bytes.Buffer) {
		var toAgent bytes.Buffer
		b := newBoundary(&settings{maxMessageBytes: 1 << 20, maxPendingPermissions: 1}, &toAgent, func(error) {})
		_, _ = b.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}` + "\n"))
		return b, &toAgent
	}
	established := func() (*boundary, *bytes.Buffer) {
		b, out := newWire()
		if fwd, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)); !fwd || err != nil {
			t.Fatalf("session/new response: %v %v", fwd, err)
		}
		return b, out
	}
	cases := map[string]struct {
		line    string
		forward bool
		err     error
	}{
		"update":                  {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`, true, nil},
		"update without update":   {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{}}}`, false, errInvalidParams},
		"update with bad content": {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}}}`, false, errInvalidParams},
		"unknown update kind":     {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"from_the_future","x":1}}}`, true, nil},
		"permission":              {`{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1",` + permissionBody + `}}`, true, nil},
		"permission no options":   {`{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t"}}}`, false, errInvalidParams},
		"permission no tool call": {`{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{},"options":[]}}`, false, errInvalidParams},
		"foreign update":          {`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2","update":{}}}`, false, errForeignSession},
		"update without session":  {`{"jsonrpc":"2.0","method":"session/update","params":{"update":{}}}`, false, errInvalidParams},
		"wrong jsonrpc":           {`{"jsonrpc":"1.0","method":"session/update","params":{}}`, false, errBadEnvelope},
		"no jsonrpc":              {`{"method":"session/update","params":{}}`, false, errBadEnvelope},
		"array":                   {`[{"jsonrpc":"2.0","method":"session/update"}]`, false, errBadEnvelope},
		"scalar params":           {`{"jsonrpc":"2.0","method":"session/update","params":3}`, false, errBadEnvelope},
		"method and result":       {`{"jsonrpc":"2.0","id":5,"method":"x","result":{}}`, false, errBadEnvelope},
		"result and error":        {`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, false, errBadEnvelope},
		"error without code":      {`{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}`, false, errBadEnvelope},
		"unmatched":               {`{"jsonrpc":"2.0","id":99,"result":{}}`, false, errUnmatchedResponse},
		"unknown notification":    {`{"jsonrpc":"2.0","method":"session/whatever","params":{}}`, false, errUnknownNotification},
		"extension notification":  {`{"jsonrpc":"2.0","method":"_vendor/thing","params":{}}`, false, nil},
		"cancel request":          {`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`, true, nil},
		"cancel without id":       {`{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}`, false, errInvalidParams},
		"unknown request":         {`{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{}}`, true, nil},
		"request with bool id":    {`{"jsonrpc":"2.0","id":true,"method":"fs/read_text_file","params":{}}`, false, errBadEnvelope},
		"blank":                   {`   `, false, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, _ := established()
			forward, err := b.inspect([]byte(tc.line))
			if forward != tc.forward || !errors.Is(err, tc.err) {
				t.Fatalf("inspect = %v, %v; want %v, %v", forward, err, tc.forward, tc.err)
			}
		})
	}

	t.Run("update before the session exists", func(t *testing.T) {
		b, _ := newWire()
		_, err := b.inspect([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{}}}`))
		if !errors.Is(err, errForeignSession) {
			t.Fatalf("inspect = %v", err)
		}
	})
	t.Run("syntax error is answered, not forwarded", func(t *testing.T) {
		b, out := established()
		forward, err := b.inspect([]byte(`{"jsonrpc":`))
		if forward || err != nil || !strings.Contains(out.String(), `"code":-32700`) {
			t.Fatalf("inspect = %v, %v; wrote %q", forward, err, out.String())
		}
	})
	t.Run("permission overflow is answered cancelled", func(t *testing.T) {
		b, out := established()
		ask := func(id string) error {
			_, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"session/request_permission","params":{"sessionId":"s1",` + permissionBody + `}}`))
			return err
		}
		out.Reset() // our session/new request
		if err := ask("p1"); err != nil {
			t.Fatal(err)
		}
		if err := ask("p2"); !errors.Is(err, errTooManyPermissions) {
			t.Fatalf("second permission = %v", err)
		}
		if out.String() != `{"jsonrpc":"2.0","id":"p2","result":{"outcome":{"outcome":"cancelled"}}}`+"\n" {
			t.Fatalf("overflow answer = %q", out.String())
		}
		// Our answer to p1 goes through Write: then p1 is answered, and teardown has nothing
		// left to answer.
		out.Reset()
		_, _ = b.Write([]byte(`{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"cancelled"}}}` + "\n"))
		b.cancelPendingPermissions()
		if strings.Count(out.String(), `"id":"p1"`) != 1 {
			t.Fatalf("p1 answered %d times: %q", strings.Count(out.String(), `"id":"p1"`), out.String())
		}
	})
	// The boundary remembers the one request converse awaits (docs/acp.md): an answer given
	// twice, or to a request it no longer awaits, matches nothing.
	t.Run("answer given twice", func(t *testing.T) {
		b, _ := established()
		if _, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)); !errors.Is(err, errUnmatchedResponse) {
			t.Fatalf("inspect = %v", err)
		}
	})
	t.Run("answer to a request no longer awaited", func(t *testing.T) {
		b, _ := newWire()
		_, _ = b.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}` + "\n"))
		if _, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)); !errors.Is(err, errUnmatchedResponse) {
			t.Fatalf("inspect = %v", err)
		}
		if forward, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)); !forward || err != nil {
			t.Fatalf("awaited answer: %v %v", forward, err)
		}
	})
	t.Run("permission for a foreign session", func(t *testing.T) {
		b, _ := established()
		_, err := b.inspect([]byte(`{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s9"}}`))
		if !errors.Is(err, errForeignSession) {
			t.Fatalf("inspect = %v", err)
		}
	})
}

func TestPermissionTitleFallback(t *testing.T) {
	blank := " "
	named := "Run tests"
	for _, tc := range []struct {
		title *string
		want  string
	}{{nil, "ACP permission request"}, {&blank, "ACP permission request"}, {&named, "Run tests"}} {
		if got := permissionTitle(acpsdk.ToolCallUpdate{ToolCallId: "t", Title: tc.title}); got != tc.want {
			t.Errorf("permissionTitle = %q, want %q", got, tc.want)
		}
	}
}

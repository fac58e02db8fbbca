package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// commit_linger is read in both stores' blocks, defaults to DefaultCommitLinger, and a value
// out of bounds is refused with a message that says the bounds, from the Caddyfile and from
// JSON (Provision) alike.
func TestCommitLingerSettingOfBothStores(t *testing.T) {
	var b BoltStore
	if err := b.UnmarshalCaddyfile(caddyfile.NewTestDispenser("bolt {\n path /tmp/x\n commit_linger 5ms\n}")); err != nil {
		t.Fatal(err)
	}
	if got, err := commitLinger(b.CommitLinger, "bolt"); err != nil || got != 5*time.Millisecond {
		t.Fatalf("bolt commit_linger = %v, %v; want 5ms", got, err)
	}
	var p PostgresStore
	if err := p.UnmarshalCaddyfile(caddyfile.NewTestDispenser("postgres {\n dsn postgres://h/db\n commit_linger 0\n}")); err != nil {
		t.Fatal(err)
	}
	if got, err := commitLinger(p.CommitLinger, "postgres"); err != nil || got != 0 {
		t.Fatalf("postgres commit_linger 0 = %v, %v; want 0 (off)", got, err)
	}
	if got, err := commitLinger(nil, "bolt"); err != nil || got != DefaultCommitLinger {
		t.Fatalf("unset commit_linger = %v, %v; want the default", got, err)
	}
	for _, bad := range []string{"1s", "-1ms", "soon"} {
		var b BoltStore
		err := b.UnmarshalCaddyfile(caddyfile.NewTestDispenser("bolt {\n commit_linger " + bad + "\n}"))
		if err == nil || !strings.Contains(err.Error(), "commit_linger") {
			t.Fatalf("commit_linger %s: %v, want an error naming the setting", bad, err)
		}
	}
	tooLong := caddy.Duration(time.Second)
	err := (&BoltStore{Path: t.TempDir(), CommitLinger: &tooLong}).Provision(caddy.Context{})
	if err == nil || !strings.Contains(err.Error(), "want 0 (off) to 100ms") {
		t.Fatalf("JSON commit_linger 1s: %v, want the bounds", err)
	}
}

package backend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// openChildEnv, when set to a data directory, turns the test binary into the child of
// TestDamagedStoreFiles: it opens the store there, reads every execution named in
// openChildIDsEnv with its events, and prints one line: "OK" or "ERR <error>". A panic or a
// memory fault in bbolt would kill it with a non-zero status and a stack dump instead, which a
// test in the same process could not survive to report.
const (
	openChildEnv    = "HARNESS_EDGE_OPEN_CHILD_DIR"
	openChildIDsEnv = "HARNESS_EDGE_OPEN_CHILD_IDS"
)

func runOpenChild(dir string) {
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(0)
	}
	ctx := context.Background()
	for _, id := range strings.Split(os.Getenv(openChildIDsEnv), ",") {
		_, _ = rt.GetExecution(ctx, id)
		_, _, _ = rt.ListEvents(ctx, id, 0, 0)
		_, _ = rt.ListArtifacts(ctx, id)
	}
	if err := rt.Close(); err != nil {
		fmt.Printf("ERR close: %v\n", err)
		os.Exit(0)
	}
	fmt.Println("OK")
	os.Exit(0)
}

// Issue 12, item 4: truncated or overwritten store files made the process panic or die of
// SIGSEGV, and an empty file silently became an empty store. Each variant below is opened in
// a child process; the child must always exit normally, with a one-line error naming the file
// and the way out where the file cannot be used, never a stack dump.
func TestDamagedStoreFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a store and opens 12 damaged copies in child processes; run without -short")
	}
	src := t.TempDir()
	rt := openRuntime(t, src, optsNone())
	conv := newConversation(t, rt)
	var ids []string
	for i := range 40 {
		exec := start(t, rt, conv, startOpts{input: strings.Repeat(fmt.Sprintf("input %d ", i), 40), config: api.JSONObject{"artifactName": "a.txt"}})
		finalOf(t, rt, exec.ID)
		ids = append(ids, exec.ID)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(src, local.FileName))
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	if len(good) < 8*page {
		t.Fatalf("store is only %d bytes; the variants need more pages", len(good))
	}
	rng := rand.New(rand.NewPCG(12, 4))
	overwrite := func(at int) func([]byte) []byte {
		return func(b []byte) []byte {
			for i := at; i < min(at+256, len(b)); i++ {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
	}
	zero := func(from, to int) func([]byte) []byte {
		return func(b []byte) []byte { clear(b[from:to]); return b }
	}
	variants := []struct {
		name    string
		damage  func([]byte) []byte
		mustErr bool // false: the file may still be usable (bbolt keeps two meta pages; a page may be free)
	}{
		{"empty", func([]byte) []byte { return nil }, true},
		{"truncated to 100 bytes", func(b []byte) []byte { return b[:100] }, true},
		{"truncated to one page", func(b []byte) []byte { return b[:page] }, true},
		{"truncated inside the third page", func(b []byte) []byte { return b[:2*page+100] }, true},
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2/page*page] }, false},
		{"truncated by one page", func(b []byte) []byte { return b[:len(b)-page] }, false},
		{"first meta page zeroed", zero(0, page), false},
		{"both meta pages zeroed", zero(0, 2*page), true},
		{"random bytes over the third page", overwrite(2 * page), false},
		{"random bytes in the middle", overwrite(len(good) / 2), false},
		{"random bytes at page headers", func(b []byte) []byte {
			for p := 2; p*page < len(b); p += 3 {
				b = overwrite(p * page)(b)
			}
			return b
		}, true},
		{"random bytes near the end", overwrite(len(good) - page - 300), false},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, local.FileName)
			if err := os.WriteFile(path, v.damage(bytes.Clone(good)), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), openChildEnv+"="+dir, openChildIDsEnv+"="+strings.Join(ids, ","))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the child died (%v):\n%s", err, tail(stderr.String(), 2000))
			}
			line := strings.TrimSpace(string(out))
			t.Logf("%s", line)
			switch {
			case line == "OK":
				if v.mustErr {
					t.Fatal("opened a file that cannot hold the store")
				}
			case strings.HasPrefix(line, "ERR "):
				if strings.Contains(line, "\n") || !strings.Contains(line, path) || !strings.Contains(line, "backup") {
					t.Fatalf("error is not one line naming the file and the way out: %s", line)
				}
			default:
				t.Fatalf("unexpected child output %q\nstderr: %s", out, tail(stderr.String(), 2000))
			}
			if v.mustErr && !strings.Contains(line, "is damaged") {
				t.Fatalf("not reported as damaged: %s", line)
			}
		})
	}
}

// An empty file is refused in-process too, and left as it is.
func TestEmptyStoreFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, local.FileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}})
	if !errors.Is(err, backend.ErrStoreDamaged) {
		t.Fatalf("Open of an empty store file: %v", err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() != 0 {
		t.Fatalf("the empty file was touched: %v %v", info, err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

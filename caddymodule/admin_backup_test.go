package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// adminGet fetches an admin API path and returns the status and body.
func adminGet(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(adminURL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, body
}

// Issue 12, item 4: `curl localhost:2019/harness/backup > harness.db.bak` on a running server,
// then the documented restore (a stopped server, harness.db replaced by the backup, started
// again) on a fresh data directory serves everything the backup holds.
func TestAdminBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	loadCaddyfile(t, site("http://localhost:9080", dir, ""))
	c := newClient(t, httpURL, nil)
	conv := c.createConversation()
	exec := c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "kept by the backup"})
	events := c.openStream(exec.ID, "").readAll(t)
	final := c.execution(exec.ID)

	status, backup := adminGet(t, "/harness/backup")
	if status != http.StatusOK {
		t.Fatalf("GET /harness/backup: %d %s", status, backup)
	}
	if status, body := adminGet(t, "/harness/backup?data_dir="+url.QueryEscape(dir)); status != http.StatusOK || len(body) == 0 {
		t.Fatalf("GET /harness/backup?data_dir=: %d, %d bytes", status, len(body))
	}
	resp, err := http.Post(adminURL+"/harness/backup", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /harness/backup: %d", resp.StatusCode)
	}

	// Restore: stop (unload), put the backup in place of harness.db in a new directory, start.
	unloadConfig(t)
	if status, body := adminGet(t, "/harness/backup"); status != http.StatusNotFound {
		t.Fatalf("backup with no harness handler: %d %s", status, body)
	}
	restored := t.TempDir()
	if err := os.WriteFile(filepath.Join(restored, local.FileName), backup, 0o600); err != nil {
		t.Fatal(err)
	}
	loadCaddyfile(t, site("http://localhost:9080", restored, ""))
	if got := c.execution(exec.ID); jsonOf(t, got) != jsonOf(t, final) {
		t.Fatalf("restored execution differs:\n%s\n%s", jsonOf(t, final), jsonOf(t, got))
	}
	if got := c.events(exec.ID, 0); jsonOf(t, got) != jsonOf(t, events) {
		t.Fatalf("restored events differ:\n%s\n%s", jsonOf(t, events), jsonOf(t, got))
	}
	var got api.Conversation
	c.do(http.MethodGet, "/v1/conversations/"+conv.ID, nil, http.StatusOK, &got)
}

// With several data directories the caller chooses one; an unknown one is 404.
func TestAdminBackupChoosesTheDataDirectory(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	handle /a/* {
		uri strip_prefix /a
		harness {
			data_dir %s
		}
	}
	handle /b/* {
		uri strip_prefix /b
		harness {
			data_dir %s
		}
	}
}
`, dirA, dirB))
	status, body := adminGet(t, "/harness/backup")
	if status != http.StatusBadRequest || !strings.Contains(string(body), dirA) || !strings.Contains(string(body), dirB) {
		t.Fatalf("backup without data_dir among two: %d %s", status, body)
	}
	for _, dir := range []string{dirA, dirB} {
		if status, body := adminGet(t, "/harness/backup?data_dir="+url.QueryEscape(dir)); status != http.StatusOK || len(body) == 0 {
			t.Fatalf("backup of %s: %d, %d bytes", dir, status, len(body))
		}
	}
	if status, body := adminGet(t, "/harness/backup?data_dir="+url.QueryEscape(t.TempDir())); status != http.StatusNotFound {
		t.Fatalf("backup of an unknown data_dir: %d %s", status, body)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

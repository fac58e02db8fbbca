package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

func init() {
	caddy.RegisterModule(new(noBackupStore))
}

// noBackupStore is the bolt store with Backup refused, as a database server's store refuses
// it: a test-only module of harness.stores, to see what the admin route answers then.
type noBackupStore struct{ BoltStore }

func (*noBackupStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "harness.stores.test_nobackup", New: func() caddy.Module { return new(noBackupStore) }}
}

func (s *noBackupStore) StoreKey() string { return "test_nobackup:" + s.Dir() }

func (s *noBackupStore) OpenStore(opts StoreOptions) (store.Store, error) {
	st, err := s.BoltStore.OpenStore(opts)
	if err != nil {
		return nil, err
	}
	return refusingBackup{st}, nil
}

type refusingBackup struct{ store.Store }

func (refusingBackup) Backup(io.Writer) (int64, error) {
	return 0, fmt.Errorf("this store has no backup of its own: %w", errors.ErrUnsupported)
}

// A store module from the JSON config serves the protocol; the admin backup of a store that
// cannot back up answers 501 with a message saying what to do, not an empty file.
func TestStoreModuleAndBackupRefused(t *testing.T) {
	dir := t.TempDir()
	loadCaddyfile(t, fmt.Sprintf(`
http://localhost:9080 {
	harness {
		store test_nobackup %s
		provider mock
	}
}
`, dir))
	c := newClient(t, httpURL, nil)
	conv := c.createConversation()
	c.startExecution(api.StartExecutionRequest{ConversationID: conv.ID, ProviderID: "mock", Input: "x"})
	status, body := adminGet(t, "/harness/backup")
	if status != http.StatusNotImplemented || !strings.Contains(string(body), "cannot be backed up through Caddy") ||
		!strings.Contains(string(body), "test_nobackup:"+dir) {
		t.Fatalf("backup of a store without one: %d %s", status, body)
	}
	if status, body := adminGet(t, "/harness/backup?store=test_nobackup:"+dir); status != http.StatusNotImplemented {
		t.Fatalf("backup by ?store=: %d %s", status, body)
	}
}

// The JSON config may not name the store twice (store and data_dir): Validate says so, before
// anything is opened.
func TestStoreAndDataDirConflict(t *testing.T) {
	h := &Harness{DataDir: t.TempDir(), StoreRaw: json.RawMessage(`{"backend":"bolt","path":"/tmp/elsewhere"}`)}
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "both store and data_dir are set") {
		t.Fatalf("Validate: %v", err)
	}
}

package proxy

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/internal/testutil"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// A conversation record that cannot be decoded does not make the listing fail: it is skipped,
// every other conversation is listed, and the log names it once as a conversation.
func TestListingSkipsADamagedConversation(t *testing.T) {
	dir := t.TempDir()
	var logs testutil.LockedBuffer
	ts := serveDir(t, dir, &logs, nil)
	create := func() string {
		res := ts.post("/v1/conversations", "{}")
		requireStatus(t, res, http.StatusCreated)
		return decodeBody[api.Conversation](t, res).ID
	}
	damaged, kept := create(), create()
	ts.stop()

	db, err := bolt.Open(filepath.Join(dir, local.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("conversations")).Put([]byte(damaged), []byte(`{"id":`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	ts = serveDir(t, dir, &logs, nil)
	for range 2 {
		res := ts.get("/v1/conversations")
		requireStatus(t, res, http.StatusOK)
		if got := summaryIDs(decodeBody[api.ConversationList](t, res).Conversations); len(got) != 1 || got[0] != kept {
			t.Fatalf("listing with a damaged conversation: %v, want only %s", got, kept)
		}
	}
	out := logs.String()
	if n := strings.Count(out, damaged); n != 1 || !strings.Contains(out, "stored conversation record cannot be decoded") {
		t.Fatalf("the log names the damaged conversation %d times, want once as a conversation:\n%s", n, out)
	}
}

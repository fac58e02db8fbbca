//go:build linux

package proxy

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/internal/testutil"
)

// The same on a real full disk (an 8 MiB tmpfs, filled): starts whose input the store has no
// room for are refused with 500, and the log has one line for them and a count, not a line each.
func TestRequestFailuresOnAFullDisk(t *testing.T) {
	disk := testutil.MountTmpfs(t, "8m", "TestRequestFailuresOnAFullDisk ./proxy/")
	var logs testutil.LockedBuffer
	ts, _ := serveStore(t, filepath.Join(disk, "store"), &logs)
	conv := ts.createConversation()
	testutil.FillFile(t, filepath.Join(disk, "ballast"), 8<<20) // every byte left
	began := time.Now()
	input := strings.Repeat("x", 256<<10) // a start needs new pages: the file must grow
	statuses := ts.sendAll(60, func(i int) request {
		body := fmt.Sprintf(`{"conversationId":%q,"providerId":"mock","input":"%d %s"}`, conv, i, input)
		return request{method: http.MethodPost, path: "/v1/executions", body: &body}
	})
	failed := statuses[http.StatusInternalServerError]
	if failed < 50 || failed+statuses[http.StatusAccepted] != 60 {
		t.Fatalf("statuses %v on a full disk: want (nearly) every start refused with 500", statuses)
	}
	ts.handler.Shutdown()
	out := logs.String()
	if !strings.Contains(out, "no space left on device") {
		t.Fatalf("the log does not give the cause:\n%s", out)
	}
	requireFailuresSummarised(t, out, failed, began)
}

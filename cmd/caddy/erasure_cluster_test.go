package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClusterDeletesAConversationOnEveryNode runs two nodes of the binary on one PostgreSQL
// database. A conversation deleted on node A answers 404 on node B at once — the conversation
// and its executions, one of which B ran itself (and keeps in memory) — and B's tenant stream
// carries the marker. Then a loop of starts on B, back to back without bound, races a delete
// on A of another conversation, which answers 200 to its first request (the seal): each start
// answers 409 "being deleted" or 404, or its execution is erased with the conversation, so that
// afterwards neither node lists or reads any of them and no row of the database holds the
// conversation's executions (every table read as text).
func TestClusterDeletesAConversationOnEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and PostgreSQL; run without -short")
	}
	dsn := clusterDatabase(t)
	bin := buildCaddy(t)
	as := unprivilegedUser(t, bin)
	a := startClusterNode(t, bin, as, dsn, "a", "10s")
	b := startClusterNode(t, bin, as, dsn, "b", "10s")

	newConv := func(base string) string {
		var c struct{ ID string }
		decodeInto(t, must(t, http.MethodPost, base+"/v1/conversations", map[string]any{}, http.StatusCreated).body, &c)
		return c.ID
	}
	startOn := func(ctx context.Context, base, conv, input string, delayMs int) (answer, error) {
		return call(ctx, http.MethodPost, base+"/v1/executions", map[string]any{
			"conversationId": conv, "providerId": "mock", "input": input, "config": map[string]any{"delayMs": delayMs}})
	}
	waitEnded := func(base, id string) {
		t.Helper()
		for {
			x, err := must(t, http.MethodGet, base+"/v1/executions/"+id, nil, http.StatusOK).execution()
			if err != nil {
				t.Fatal(err)
			}
			if x.State.Terminal() {
				return
			}
			select {
			case <-t.Context().Done():
				t.Fatalf("execution %s never ended", id)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	// Delete on A; 404 on B at once.
	conv := newConv(a.base)
	var ids []string
	for _, n := range []*clusterNode{a, b} {
		ans, err := startOn(t.Context(), n.base, conv, "said on "+n.name, 0)
		if err != nil || ans.status != http.StatusAccepted {
			t.Fatalf("start on %s: %v %d %s", n.name, err, ans.status, ans.body)
		}
		x, _ := ans.execution()
		ids = append(ids, x.ID)
		waitEnded(n.base, x.ID)
		must(t, http.MethodGet, b.base+"/v1/executions/"+x.ID+"/events", nil, http.StatusOK) // B reads it (and may cache it)
	}
	must(t, http.MethodDelete, a.base+"/v1/conversations/"+conv, nil, http.StatusOK)
	for _, n := range []*clusterNode{b, a} {
		must(t, http.MethodGet, n.base+"/v1/conversations/"+conv, nil, http.StatusNotFound)
		for _, id := range ids {
			must(t, http.MethodGet, n.base+"/v1/executions/"+id, nil, http.StatusNotFound)
			must(t, http.MethodGet, n.base+"/v1/executions/"+id+"/events", nil, http.StatusNotFound)
		}
		must(t, http.MethodDelete, n.base+"/v1/conversations/"+conv, nil, http.StatusNotFound)
		if ans, _ := startOn(t.Context(), n.base, conv, "after", 0); ans.status != http.StatusNotFound {
			t.Fatalf("a start on node %s after the delete answered %d: %s", n.name, ans.status, ans.body)
		}
	}
	page := string(must(t, http.MethodGet, b.base+"/v1/events?after=0", nil, http.StatusOK).body)
	if !strings.Contains(page, `"deletions":[{"type":"conversation.deleted","conversationId":"`+conv+`"`) {
		t.Fatalf("node b's tenant stream has no conversation.deleted marker for %s: %s", conv, page)
	}
	for _, id := range ids {
		if strings.Contains(page, id) {
			t.Fatalf("node b's tenant stream still carries %s of the deleted conversation", id)
		}
	}

	// Starts on B racing a delete on A.
	raced := newConv(a.base)
	var (
		mu         sync.Mutex
		accepted   []string
		answers    = map[int]int{}
		badAnswers []string // 409s that are not "being deleted"
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Back to back, without pause and without bound, until the conversation is gone: the
		// delete seals it first, so these starts cannot hold it off (each answers 202 before
		// the seal, 409 "being deleted" after it, 404 once it is erased).
		for i := 0; ; i++ {
			ans, err := startOn(t.Context(), b.base, raced, fmt.Sprintf("racing start %d", i), 50)
			if err != nil {
				return
			}
			mu.Lock()
			answers[ans.status]++
			switch ans.status {
			case http.StatusAccepted:
				x, _ := ans.execution()
				accepted = append(accepted, x.ID)
			case http.StatusConflict:
				if !strings.Contains(string(ans.body), `"deleting":true`) {
					badAnswers = append(badAnswers, string(ans.body))
				}
			}
			mu.Unlock()
			if ans.status == http.StatusNotFound {
				return // the conversation is gone: every later start would say the same
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	// Let some starts land, then delete, cancelling them: one request, answered 200.
	for {
		mu.Lock()
		n := len(accepted)
		mu.Unlock()
		if n >= 3 {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the racing starts never got going")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if status := must409or200(t, a.base+"/v1/conversations/"+raced+"?cancel=true"); status != http.StatusOK {
		close(stop)
		wg.Wait()
		t.Fatalf("DELETE ?cancel=true while starts come back to back on another node answered %d, want 200 on the first request", status)
	}
	wg.Wait() // the starter ends by itself, on its first 404
	t.Logf("racing starts on b: %v (HTTP status: count); %d accepted", answers, len(accepted))
	if answers[http.StatusNotFound] == 0 && len(accepted) == 0 {
		t.Fatal("no start raced the delete")
	}
	for status := range answers {
		if status != http.StatusAccepted && status != http.StatusConflict && status != http.StatusNotFound {
			t.Fatalf("a racing start answered %d: want 202, 409 (being deleted) or 404 only (%v)", status, answers)
		}
	}
	if len(badAnswers) > 0 {
		t.Fatalf("a racing start answered 409 other than CONVERSATION_BUSY being deleted: %s", badAnswers[0])
	}
	for _, n := range []*clusterNode{a, b} {
		list := string(must(t, http.MethodGet, n.base+"/v1/executions?limit=200", nil, http.StatusOK).body)
		for _, id := range accepted {
			must(t, http.MethodGet, n.base+"/v1/executions/"+id, nil, http.StatusNotFound)
			if strings.Contains(list, id) {
				t.Fatalf("node %s still lists %s", n.name, id)
			}
		}
		if convs := string(must(t, http.MethodGet, n.base+"/v1/conversations", nil, http.StatusOK).body); strings.Contains(convs, raced) || strings.Contains(convs, conv) {
			t.Fatalf("node %s still lists a deleted conversation: %s", n.name, convs)
		}
	}
	needles := append(slices.Clone(accepted), ids...)
	needles = append(needles, "said on a", "said on b", "racing start") // the inputs
	if rows := rowsHolding(t, dsn, needles...); len(rows) > 0 {
		t.Fatalf("the database still holds executions of the deleted conversations:\n%s", strings.Join(rows, "\n"))
	}
	for _, n := range []*clusterNode{a, b} {
		n.srv.stop(t)
	}
}

// must409or200 sends a DELETE and returns its status, failing on anything but 200 or 409.
func must409or200(t *testing.T, url string) int {
	t.Helper()
	ans, err := call(t.Context(), http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.status != http.StatusOK && (ans.status != http.StatusConflict || ans.problemCode() != "CONVERSATION_BUSY") {
		t.Fatalf("DELETE %s: %d %s", url, ans.status, ans.body)
	}
	return ans.status
}

// rowsHolding reads every table of the database's public schema, each row as text, and
// reports those that contain one of needles.
func rowsHolding(t *testing.T, dsn string, needles ...string) []string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, table := range tables {
		for _, n := range needles {
			var count int
			// A bytea column reads as hex: the needle is looked for in both forms.
			q := fmt.Sprintf(`SELECT count(*) FROM %s AS r WHERE strpos(r::text, $1) > 0 OR strpos(r::text, $2) > 0`, table)
			if err := conn.QueryRow(ctx, q, n, hex.EncodeToString([]byte(n))).Scan(&count); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if count > 0 {
				found = append(found, fmt.Sprintf("%s: %d row(s) hold %s", table, count, n))
			}
		}
	}
	return found
}

// decodeInto decodes a JSON body into v, failing the test when it is not.
func decodeInto(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/harness-edge/harness-edge/console"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestConsoleInBrowser drives the web console in a real headless Chromium against the real
// binary started from examples/Caddyfile (which turns the console on): a person starts an approval
// execution from the page, sees action.required arrive live, approves with the keyboard and sees
// the run complete; answers an input request and denies an approval; is told plainly
// (ACTION_ALREADY_RESOLVED) when another client answered first; keeps every event exactly once
// when a reload drops the stream mid-run; watches a slow run's text grow and cancels it with a
// reason; reaches the content by the skip link. Any script error or CSP violation in the page
// fails the test. The list view is checked in TestConsoleListInBrowser.
//
// With HARNESS_CONSOLE_SCREENSHOTS=<dir> the test saves the screenshots shown in the README.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddy(t, bin, instanceEnv(t))
	c := &client{t: t, base: srv.url}
	page := openBrowser(t)

	t.Run("approve", func(t *testing.T) {
		page.t = t
		page.navigate(srv.url + "/console/#/new")
		page.waitJS(`document.querySelector('#capabilities table') !== null`)
		page.do(chromedp.SetValue(chromedp.ID("config"), `{"requireApproval":true}`))
		page.screenshot("start.png")
		id := page.startFromPage(srv.url, "hello runtime", `{"requireApproval":true}`)
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'awaiting approval'`)
		page.waitJS(`document.querySelector('#events li[data-type="action.required"]') !== null`)
		if got := page.text("#action-name"); got != "Approve mock execution" {
			t.Fatalf("action title %q", got)
		}
		if got := page.text("#action-description"); got != "Synthetic approval used by the reference provider." {
			t.Fatalf("action description %q", got)
		}
		// The timeline shows the wait as it happens: its row is open and grows with the clock.
		page.waitJS(`document.querySelector('#timeline li[data-phase="waiting"]')?.dataset.open === 'true'`)
		waited := evaluate[int](page, `Number(document.querySelector('#timeline li[data-phase="waiting"]').dataset.ms)`)
		page.waitJS(fmt.Sprintf(`Number(document.querySelector('#timeline li[data-phase="waiting"]')?.dataset.ms) > %d`, waited))
		page.screenshotFull("execution-pending-approval.png")

		// At phone width nothing overflows sideways and the answer buttons stay on screen.
		page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		page.waitJS(`window.innerWidth === 390`)
		if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Fatalf("at phone width the page is %d px wider than the screen", overflow)
		}
		if !page.rendered("#action-approve") || !page.rendered("#action-deny") {
			t.Fatal("at phone width the approve and deny buttons are not shown")
		}
		page.screenshot("execution-phone.png")
		page.desktop()

		// Keyboard: focus the button and press Enter, as a person without a mouse does.
		page.do(chromedp.Focus(chromedp.ID("action-approve")), chromedp.KeyEvent(kb.Enter))
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'succeeded'`)
		page.waitJS(`document.querySelector('#final-output')?.textContent === 'Echo: hello runtime'`)
		if got := page.text("#output"); got != "Echo: hello runtime" {
			t.Fatalf("assembled output %q", got)
		}
		if got := page.text("#action-result"); !strings.HasPrefix(got, "You approved") || strings.Contains(got, "running") {
			t.Fatalf("action result %q after the run completed", got)
		}
		page.waitJS(`document.querySelector('#stream-status')?.textContent.includes('run.completed')`)
		if page.exists("#action-approve") {
			t.Fatal("the approve button is still shown after the run completed")
		}
		if page.rendered("#cancel") {
			t.Fatal("the cancel button is still shown after the run completed")
		}
		// Every event once, in order: the page shows what the server stored.
		var stored api.EventList
		if err := json.Unmarshal(c.getRaw("/v1/executions/"+id+"/events"), &stored); err != nil {
			t.Fatal(err)
		}
		shown := evaluate[[]string](page, `[...document.querySelectorAll('#events li')].map(li => li.dataset.type)`)
		var want []string
		for _, ev := range stored.Events {
			want = append(want, string(ev.Type))
		}
		if strings.Join(shown, " ") != strings.Join(want, " ") {
			t.Fatalf("events shown %v, stored %v", shown, want)
		}
		if got := c.get("/v1/executions/" + id); got["state"] != "succeeded" {
			t.Fatalf("the server says %v", got["state"])
		}
		requireTimeline(t, page, stored.Events)
		page.screenshotFull("execution-completed.png")
	})

	t.Run("answered elsewhere first", func(t *testing.T) {
		page.t = t
		id := page.startFromPage(srv.url, "raced", `{"requireApproval":true}`)
		page.waitJS(`document.querySelector('#action-approve') !== null`)
		actionID := pendingActionID(t, c, id)
		// Another client answers, then the person clicks, in one task of the page: the stream
		// cannot remove the button in between, so the click always comes second. The other
		// client's request is a synchronous XMLHttpRequest only to keep it in that task.
		status := evaluate[int](page, fmt.Sprintf(`(() => {
			const other = new XMLHttpRequest();
			other.open('POST', '/v1/executions/%s/actions/%s:respond', false);
			other.setRequestHeader('Content-Type', 'application/json');
			other.send('{"approved":true}');
			document.getElementById('action-approve').click();
			return other.status;
		})()`, id, actionID))
		if status != http.StatusOK {
			t.Fatalf("the other client's answer: status %d", status)
		}
		page.waitJS(`document.querySelector('#action-result')?.textContent.includes('ACTION_ALREADY_RESOLVED')`)
		if got := page.text("#action-result"); !strings.Contains(got, "Someone else answered") {
			t.Fatalf("action result %q", got)
		}
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'succeeded'`)
	})

	t.Run("input and deny", func(t *testing.T) {
		page.t = t
		page.startFromPage(srv.url, "ask", `{"requestInput":true}`)
		page.waitJS(`document.querySelector('#action-input') !== null && document.querySelector('#exec-state')?.textContent === 'awaiting input'`)
		if got := page.text("#action-name"); got != "Provide mock input" {
			t.Fatalf("input action title %q", got)
		}
		page.do(chromedp.SendKeys(chromedp.ID("action-input"), "typed answer"), chromedp.Click(chromedp.ID("action-send")))
		page.waitJS(`document.querySelector('#final-output')?.textContent === 'Echo: ask typed answer'`)

		page.startFromPage(srv.url, "refused", `{"requireApproval":true}`)
		page.waitJS(`document.querySelector('#action-deny') !== null`)
		page.do(chromedp.Click(chromedp.ID("action-deny")))
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'failed'`)
		if got := page.text("#final"); !strings.Contains(got, "Mock execution was not approved") {
			t.Fatalf("final state shown %q", got)
		}
	})

	t.Run("resume after a dropped stream", func(t *testing.T) {
		page.t = t
		// The run waits for approval, so the stream is open (and nothing races the reload).
		id := page.startFromPage(srv.url, "after the reconnect", `{"requireApproval":true}`)
		page.waitJS(`document.querySelector('#action-approve') !== null && document.querySelector('#stream-status')?.textContent.startsWith('Live')`)
		// A forced config reload ends every open event stream (the module's "stopping" hook);
		// the browser reconnects by itself and sends Last-Event-ID.
		reload := exec.Command(bin, "reload", "--force", "--config", exampleCaddyfile, "--adapter", "caddyfile",
			"--address", lookup(srv.cmd.Env, "HARNESS_ADMIN"))
		reload.Env = srv.cmd.Env
		if out, err := reload.CombinedOutput(); err != nil {
			t.Fatalf("caddy reload: %v\n%s", err, out)
		}
		page.waitJS(`Number(document.querySelector('#stream-status')?.dataset.reconnects) >= 1`)
		page.do(chromedp.Click(chromedp.ID("action-approve")))
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'succeeded' &&
			document.querySelector('#stream-status')?.textContent.includes('run.completed')`)
		// Every event exactly once: none lost across the reconnect, none repeated.
		var stored api.EventList
		if err := json.Unmarshal(c.getRaw("/v1/executions/"+id+"/events"), &stored); err != nil {
			t.Fatal(err)
		}
		shown := evaluate[[]int64](page, `[...document.querySelectorAll('#events li .seq')].map(s => Number(s.textContent.slice(1)))`)
		var want []int64
		for _, ev := range stored.Events {
			want = append(want, ev.Sequence)
		}
		if fmt.Sprint(shown) != fmt.Sprint(want) {
			t.Fatalf("after the reconnect the page shows events %v, the server stored %v", shown, want)
		}
		if got := page.text("#output"); got != "Echo: after the reconnect" {
			t.Fatalf("output after the reconnect %q", got)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		page.t = t
		// 500 ms before each word: the text grows while the run goes on.
		id := page.startFromPage(srv.url, strings.Repeat("word ", 40), `{"delayMs":500}`)
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'running' &&
			document.querySelector('#output')?.textContent.startsWith('Echo: word')`)
		if got := c.get("/v1/executions/" + id); got["state"] != "running" {
			t.Fatalf("the page showed partial output, but the server says %v", got["state"])
		}
		const reason = "stopped from the console test"
		page.do(chromedp.SendKeys(chromedp.ID("cancel-reason"), reason), chromedp.Click(chromedp.ID("cancel")))
		page.waitJS(`document.querySelector('#cancel-result')?.textContent.startsWith('Cancelled')`)
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'cancelled'`)
		page.waitJS(`document.querySelector('#events li[data-type="run.cancelled"]') !== null`)
		var stored api.EventList
		if err := json.Unmarshal(c.getRaw("/v1/executions/"+id+"/events"), &stored); err != nil {
			t.Fatal(err)
		}
		last := stored.Events[len(stored.Events)-1]
		if last.Type != api.StandardEventTypeRunCancelled || deref(typed(last.Data.AsRunCancelledData()).Reason) != reason {
			t.Fatalf("last stored event %s %v, want run.cancelled with reason %q", last.Type, last.Data, reason)
		}
		// Over, so nothing more can come: not "None yet".
		page.waitJS(`document.querySelector('#artifacts-none')?.textContent === 'None.'`)
		page.waitJS(`document.querySelector('#timeline li[data-phase="end"] .label')?.textContent === 'Cancelled'`)
	})

	t.Run("conversation", func(t *testing.T) {
		page.t = t
		first := page.startFromPage(srv.url, "first question", `{}`)
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'succeeded' && document.querySelector('#timeline li[data-phase="end"]') !== null`)
		conv := page.text("#exec-conversation")

		// A new view starts at the top, however far down the last one was scrolled (the
		// conversation view then scrolls itself to its latest turn: console_chatcontext_test.go).
		page.do(chromedp.EmulateViewport(1200, 500))
		page.evaluateVoid(`window.scrollTo(0, document.documentElement.scrollHeight)`)
		if y := evaluate[float64](page, `window.scrollY`); y <= 0 {
			t.Fatalf("the execution page does not scroll at 500 px high (scrollY %v), so the next check would prove nothing", y)
		}
		page.evaluateVoid(`document.getElementById('nav-inbox').click()`)
		page.waitJS(`(document.getElementById('inbox-status')?.textContent ?? '') !== ''`)
		if y := evaluate[float64](page, `window.scrollY`); y != 0 {
			t.Fatalf("the inbox opened scrolled to %v px", y)
		}
		page.navigate(srv.url + "/console/#/executions/" + first)
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'succeeded'`)
		page.evaluateVoid(`document.getElementById('exec-conversation').click()`)
		page.waitJS(`document.querySelector('#transcript li.turn') !== null && document.querySelector('#conversation-status')?.dataset.opened === 'true'`)
		if bottom := evaluate[float64](page, `document.getElementById('send').getBoundingClientRect().bottom - window.innerHeight`); bottom > 0 {
			t.Fatalf("the conversation view opened with its Send button %v px below the fold", bottom)
		}
		page.desktop()

		// "Continue" opens the start form in this conversation.
		page.do(chromedp.Click(chromedp.ID("conversation-continue")))
		page.waitJS(`location.hash.startsWith('#/new') && document.querySelector('#capabilities table') !== null`)
		if got := evaluate[string](page, `document.getElementById('conversation').value`); got != conv {
			t.Fatalf("the start form's conversation is %q, want %q", got, conv)
		}
		page.do(chromedp.SetValue(chromedp.ID("input"), "second question"),
			chromedp.SetValue(chromedp.ID("config"), `{"requireApproval":true}`),
			chromedp.Click(chromedp.ID("start")))
		page.waitJS(`document.querySelector('#exec-state')?.textContent === 'awaiting approval'`)
		second := page.text("#exec-id")
		if got := page.text("#exec-conversation"); got != conv {
			t.Fatalf("the second execution is in conversation %q, want %q", got, conv)
		}

		// The transcript, oldest first: the answered question, then the one waiting for approval.
		page.navigate(srv.url + "/console/#/conversations/" + conv)
		page.waitJS(`document.querySelectorAll('#transcript li.turn').length === 2 &&
			document.querySelector('#transcript li.turn:last-child')?.dataset.state === 'awaiting_approval'`)
		type turn struct{ ID, Input, Reply string }
		const turns = `[...document.querySelectorAll('#transcript li.turn')].map(li => ({ID: li.dataset.id,
			Input: li.querySelector('.msg.input').textContent, Reply: li.querySelector('.msg.reply').textContent}))`
		got := evaluate[[]turn](page, turns)
		if len(got) != 2 || got[0] != (turn{first, "first question", "Echo: first question"}) ||
			got[1].ID != second || got[1].Input != "second question" || !strings.HasPrefix(got[1].Reply, "Waiting for approval") {
			t.Fatalf("transcript %+v", got)
		}
		// Answered elsewhere: the transcript follows without a reload.
		action := pendingActionID(t, c, second)
		c.post("/v1/executions/"+second+"/actions/"+action+":respond", map[string]any{"approved": true}, http.StatusOK)
		page.waitJS(`document.querySelector('#transcript li.turn:last-child .msg.reply')?.textContent === 'Echo: second question'`)
		page.screenshotFull("conversation.png")
	})

	t.Run("chat: enqueue", func(t *testing.T) {
		page.t = t
		consoleChatEnqueue(t, page, c, srv.url)
	})

	t.Run("chat: reject", func(t *testing.T) {
		page.t = t
		consoleChatReject(t, page, c, srv.url)
	})

	t.Run("chat: live", func(t *testing.T) {
		page.t = t
		consoleChatLive(t, page, c, srv.url)
	})

	t.Run("unknown execution", func(t *testing.T) {
		page.t = t
		page.navigate(srv.url + "/console/#/executions/exec_unknown")
		page.waitJS(`document.querySelector('#exec-error') !== null`)
		if got := page.text("#exec-error"); !strings.Contains(got, "No execution exec_unknown here") {
			t.Fatalf("error shown %q", got)
		}
		for _, sel := range []string{"#exec-body", "#output", "#artifacts", "#events-title", "#timeline", "#cancel"} {
			if page.rendered(sel) {
				t.Fatalf("an unknown execution's page shows %s", sel)
			}
		}
	})

	t.Run("page", func(t *testing.T) {
		page.t = t
		// The policy the browser got is the strict one; a violation anywhere in the run above
		// was reported as a console error (openBrowser), which requireNoPageErrors fails on.
		csp := evaluate[string](page, `fetch(location.href).then(r => r.headers.get('content-security-policy'))`, chromedp.EvalAwaitPromise)
		if csp != console.ContentSecurityPolicy {
			t.Fatalf("the console was served with CSP %q", csp)
		}
		// The icon is the console's own, so the browser does not ask the site for /favicon.ico.
		icon := evaluate[string](page, `(async () => { const r = await fetch(document.querySelector('link[rel=icon]').href);
			return r.status + ' ' + r.headers.get('content-type'); })()`, chromedp.EvalAwaitPromise)
		if icon != "200 image/svg+xml" {
			t.Fatalf("the console's icon: %s", icon)
		}
	})

	t.Run("skip link", func(t *testing.T) {
		page.t = t
		page.navigate("about:blank") // a fresh load: focus starts at the top of the page
		page.navigate(srv.url + "/console/#/new")
		page.waitJS(`document.querySelector('#provider option') !== null`)
		page.do(chromedp.KeyEvent(kb.Tab))
		page.waitJS(`document.activeElement?.classList.contains('skip')`)
		page.do(chromedp.KeyEvent(kb.Enter))
		page.waitJS(`document.activeElement?.id === 'main'`)
		if hash := evaluate[string](page, `location.hash`); hash != "#/new" {
			t.Fatalf("the skip link changed the view to %q", hash)
		}
	})

	page.t = t
	page.requireNoPageErrors()
	srv.stop(t)
}

// TestConsoleListInBrowser checks the live list: an execution started elsewhere appears at the top
// without a reload and its state follows; the state filter and the pager work; ids stay on one
// line at 1280 px. Then the overview: its figures and charts' tables equal what the listing says,
// and its provider, state, conversation and time filters (kept in the address) narrow them.
func TestConsoleListInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddyWith(t, bin, instanceEnv(t), twoProviderCaddyfile(t))
	c := &client{t: t, base: srv.url}
	if !serverLists(t, srv.url) {
		srv.stop(t)
		t.Fatal("GET /v1/executions does not list: the console's list view needs the listing extension")
	}
	page := openBrowser(t)

	startWith := func(provider string, config map[string]any) string {
		conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
		return c.post("/v1/executions", map[string]any{"conversationId": conv["id"], "providerId": provider,
			"input": "from the list test", "config": config}, http.StatusAccepted)["id"].(string)
	}
	start := func(config map[string]any) string { return startWith("mock", config) }
	finished := start(map[string]any{})
	c.waitFor(finished, api.ExecutionStateSucceeded)

	mark := page.requestMark()
	page.navigate(srv.url + "/console/#/")
	page.waitJS(fmt.Sprintf(`document.querySelector('#list-body tr[data-id=%q]') !== null`, finished))
	page.waitJS(`document.querySelector('#list-status')?.dataset.live === 'true'`)
	if page.text("#listing-notice") != "" {
		t.Fatalf("the no-listing notice is shown although the server lists: %q", page.text("#listing-notice"))
	}

	// Started by another client while the page is open: it appears first, then its state follows.
	waiting := start(map[string]any{"requireApproval": true})
	page.waitJS(fmt.Sprintf(`document.querySelector('#list-body tr:first-child')?.dataset.id === %q &&
		document.querySelector('#list-body tr:first-child .state')?.textContent === 'awaiting approval'`, waiting))
	action := pendingActionID(t, c, waiting)
	c.post("/v1/executions/"+waiting+"/actions/"+action+":respond", map[string]any{"approved": true}, http.StatusOK)
	page.waitJS(fmt.Sprintf(`document.querySelector('#list-body tr[data-id=%q] .state')?.textContent === 'succeeded'`, waiting))
	// All of that came on the one stream of the tenant's lifecycle events: the listing was read
	// once, when the page opened (issue 36: the list follows a stream instead of polling).
	isListing := func(r string) bool { return strings.HasPrefix(r, "GET "+srv.url+"/v1/executions?") }
	if listings := page.requestsSince(mark, isListing); len(listings) != 1 {
		t.Fatalf("the list read the listing %d times while it followed a new execution to its end, want once: %v", len(listings), listings)
	}
	streams := page.requestsSince(mark, func(r string) bool { return strings.HasPrefix(r, "GET "+srv.url+"/v1/events?") })
	if len(streams) != 2 || !strings.Contains(streams[1], "lifecycle=true") || !strings.Contains(streams[1], "after=") {
		t.Fatalf("the list's requests to /v1/events: %v, want the cursor of now, then one stream from it", streams)
	}

	// Filter: only the awaiting one of three.
	pending := start(map[string]any{"requireApproval": true})
	c.waitFor(pending, api.ExecutionStateAwaitingApproval)
	page.evaluateVoid(`(() => { const s = document.getElementById('state-filter'); s.value = 'awaiting_approval'; s.dispatchEvent(new Event('change')); })()`)
	page.waitJS(fmt.Sprintf(`(() => { const rows = [...document.querySelectorAll('#list-body tr')];
		return rows.length === 1 && rows[0].dataset.id === %q; })()`, pending))
	c.post("/v1/executions/"+pending+":cancel", map[string]any{}, http.StatusOK)
	page.waitJS(`document.querySelector('#list-body')?.textContent.includes('No awaiting approval executions')`)

	// Back to every state; one more waits for approval, at the top, for the screenshots.
	page.evaluateVoid(`(() => { const s = document.getElementById('state-filter'); s.value = ''; s.dispatchEvent(new Event('change')); })()`)
	waitingAgain := start(map[string]any{"requireApproval": true})
	page.waitJS(fmt.Sprintf(`document.querySelector('#list-body tr:first-child')?.dataset.id === %q &&
		document.querySelector('#list-body tr:first-child .state')?.textContent === 'awaiting approval' &&
		document.querySelectorAll('#list-body tr').length === 4`, waitingAgain))
	page.screenshot("list.png")

	// At 1280 px every id in the table is on one line (each line of an inline box is a rect).
	page.do(chromedp.EmulateViewport(1280, 900))
	page.waitJS(`window.innerWidth === 1280`)
	if wrapped := evaluate[[]string](page, `[...document.querySelectorAll('#list-body a.mono')].filter(a => a.getClientRects().length !== 1).map(a => a.textContent)`); len(wrapped) > 0 {
		t.Fatalf("at 1280 px these ids wrap: %v", wrapped)
	}
	// In a narrower window they may wrap, but nothing overflows sideways.
	page.do(chromedp.EmulateViewport(760, 900))
	page.waitJS(`window.innerWidth === 760`)
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at 760 px the list is %d px wider than the window", overflow)
	}
	page.desktop()

	// At phone width the table becomes one card per execution, and nothing overflows sideways.
	page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	page.waitJS(`window.innerWidth === 390 && getComputedStyle(document.querySelector('#list-body tr')).display === 'block'`)
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at phone width the list is %d px wider than the screen", overflow)
	}
	page.screenshot("list-phone.png")
	page.desktop()

	// Pager: 20 rows a page; with 21 newer executions the first one is on page 2.
	for range 21 {
		start(map[string]any{})
	}
	page.waitJS(fmt.Sprintf(`document.querySelectorAll('#list-body tr').length === 20 &&
		!document.querySelector('#list-body tr[data-id=%q]') && !document.getElementById('page-older').disabled`, finished))
	page.do(chromedp.Click(chromedp.ID("page-older")))
	page.waitJS(fmt.Sprintf(`document.querySelector('#list-body tr[data-id=%q]') !== null`, finished))
	page.do(chromedp.Click(chromedp.ID("page-newest")))
	page.waitJS(fmt.Sprintf(`document.querySelectorAll('#list-body tr').length === 20 && !document.querySelector('#list-body tr[data-id=%q]')`, finished))

	t.Run("overview", func(t *testing.T) {
		page.t = t
		// The other provider: one succeeds, one is denied (failed). Everything else ends too,
		// except waitingAgain, so the figures hold still while the page is read.
		otherOK := startWith("other", map[string]any{"usage": map[string]any{"inputTokens": 40, "outputTokens": 2, "cost": "0.5", "currency": "USD"}})
		// Two conversations that report usage: the cheaper one on mock, the dearer on other.
		cheap := startWith("mock", map[string]any{"usage": map[string]any{"inputTokens": 3, "cost": "0.01", "currency": "USD"}})
		otherDenied := startWith("other", map[string]any{"requireApproval": true})
		action := pendingActionID(t, c, otherDenied)
		c.post("/v1/executions/"+otherDenied+"/actions/"+action+":respond", map[string]any{"approved": false}, http.StatusOK)
		c.waitFor(otherDenied, api.ExecutionStateFailed)
		c.waitFor(otherOK, api.ExecutionStateSucceeded)
		c.waitFor(cheap, api.ExecutionStateSucceeded)
		var list api.ExecutionList
		if err := json.Unmarshal(c.getRaw("/v1/executions?limit=200"), &list); err != nil {
			t.Fatal(err)
		}
		for _, x := range list.Executions {
			if x.State == api.ExecutionStateRunning || x.State == api.ExecutionStateQueued {
				c.waitFor(x.ID, api.ExecutionStateSucceeded)
			}
		}
		all := func(api.Execution) bool { return true }

		mark := page.requestMark()
		page.navigate(srv.url + "/console/#/overview")
		requireOverview(t, page, wantOverview(t, c, all))
		page.waitJS(`document.querySelector('#ov-status')?.dataset.live === 'true'`)
		// A start and an end while the overview is open reach it on its stream, not by reading the
		// window again.
		live := startWith("other", map[string]any{"requireApproval": true})
		c.waitFor(live, api.ExecutionStateAwaitingApproval)
		requireOverview(t, page, wantOverview(t, c, all))
		c.post("/v1/executions/"+live+"/actions/"+pendingActionID(t, c, live)+":respond", map[string]any{"approved": true}, http.StatusOK)
		c.waitFor(live, api.ExecutionStateSucceeded)
		requireOverview(t, page, wantOverview(t, c, all))
		if listings := page.requestsSince(mark, func(r string) bool { return strings.HasPrefix(r, "GET "+srv.url+"/v1/executions?") }); len(listings) != 1 {
			t.Fatalf("the overview read the listing %d times while it followed an execution to its end, want once: %v", len(listings), listings)
		}
		if n := evaluate[int](page, `document.querySelectorAll('.chart-figure canvas').length`); n < 3 {
			t.Fatalf("the overview drew %d canvases, want one per chart", n)
		}
		if got := page.text("#chart-starts figcaption"); got != "Starts per minute" {
			t.Fatalf("starts chart captioned %q", got)
		}
		// The most expensive conversations, from GET /v1/usage: other's (5 chunks of 0.5 USD) before mock's.
		dear := c.get("/v1/executions/" + otherOK)["conversationId"].(string)
		cheapConv := c.get("/v1/executions/" + cheap)["conversationId"].(string)
		page.waitJS(fmt.Sprintf(`(() => { const rows = [...document.querySelectorAll('#ov-top tbody tr[data-key]')];
			return rows.length === 2 && rows[0].dataset.key === %q && rows[1].dataset.key === %q
				&& rows[0].cells[3].textContent === '2.5 USD' && rows[1].cells[3].textContent === '0.05 USD'; })()`, dear, cheapConv))
		if got := page.text("#ov-cost"); got != "2.55 USD" {
			t.Fatalf("the overview's cost is %q, want 2.55 USD", got)
		}
		if n := evaluate[int](page, `document.querySelectorAll('#chart-usage tbody tr[data-key]').length`); n < 1 {
			t.Fatal("the tokens-per-provider chart has no rows")
		}

		setFilter := func(id, value string) {
			page.evaluateVoid(fmt.Sprintf(`(() => { const el = document.getElementById(%q); el.value = %q; el.dispatchEvent(new Event('change')); })()`, id, value))
		}
		setFilter("ov-provider", "other")
		requireOverview(t, page, wantOverview(t, c, func(x api.Execution) bool { return x.ProviderID == "other" }))
		if hash := evaluate[string](page, `location.hash`); hash != "#/overview?provider=other" {
			t.Fatalf("the address keeps the filter as %q", hash)
		}
		// The address reopens the same view.
		page.navigate("about:blank")
		page.navigate(srv.url + "/console/#/overview?provider=other")
		requireOverview(t, page, wantOverview(t, c, func(x api.Execution) bool { return x.ProviderID == "other" }))
		if got := evaluate[string](page, `document.getElementById('ov-provider').value`); got != "other" {
			t.Fatalf("reopened with provider filter %q", got)
		}

		setFilter("ov-provider", "")
		setFilter("ov-state", "cancelled")
		requireOverview(t, page, wantOverview(t, c, func(x api.Execution) bool { return x.State == api.ExecutionStateCancelled }))

		setFilter("ov-state", "")
		conv := c.get("/v1/executions/" + waitingAgain)["conversationId"].(string)
		setFilter("ov-conversation", conv)
		requireOverview(t, page, wantOverview(t, c, func(x api.Execution) bool { return x.ConversationID == conv }))

		setFilter("ov-conversation", "")
		setFilter("ov-window", "15")
		page.waitJS(`document.querySelector('#chart-starts figcaption')?.textContent === 'Starts per 15 s'`)
		requireOverview(t, page, wantOverviewSince(t, c, 15*time.Minute, all))
		page.screenshotFull("overview.png") // 15 s buckets: this test's minute of work is spread out

		// On a phone the charts shrink to the screen (they are redrawn on resize).
		page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		page.waitJS(`window.innerWidth === 390 && document.documentElement.scrollWidth <= window.innerWidth`)
		page.desktop()
	})

	page.t = t
	page.requireNoPageErrors()
	srv.stop(t)
}

// serverLists asks the server whether it has the listing extension.
func serverLists(t *testing.T, base string) bool {
	t.Helper()
	res, err := http.Get(base + "/v1/executions?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// pendingActionID reads the id of the execution's unanswered action from its events.
func pendingActionID(t *testing.T, c *client, execID string) string {
	t.Helper()
	return pendingActionIDIn(t, c, execID, api.ExecutionStateAwaitingApproval)
}

// pendingActionIDIn waits until execID is in state (awaiting approval or input) and returns the
// id of its latest action.required.
func pendingActionIDIn(t *testing.T, c *client, execID string, state api.ExecutionState) string {
	t.Helper()
	c.waitFor(execID, state)
	var list api.EventList
	if err := json.Unmarshal(c.getRaw("/v1/executions/"+execID+"/events"), &list); err != nil {
		t.Fatal(err)
	}
	for i := len(list.Events) - 1; i >= 0; i-- {
		if ev := list.Events[i]; ev.Type == api.StandardEventTypeActionRequired {
			return typed(ev.Data.AsActionRequest()).ID
		}
	}
	t.Fatalf("execution %s has no action.required event", execID)
	return ""
}

// browserPage is one tab of a headless Chromium, with the errors its scripts raised.
type browserPage struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	errors   []string
	requests []string // "METHOD URL" of every request the page sent, in order (the CDP network domain)
}

// openBrowser starts Debian's chromium headless in a fresh profile. Without the
// background-networking flags it keeps dialling Google services, which fail here and flood the
// log. If the browser cannot start, the test fails under CI=true (CI installs chromium, see
// .ci/run) and is skipped elsewhere, saying how to get it.
func openBrowser(t *testing.T) *browserPage {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		path = "/usr/bin/chromium"
	}
	profile, err := os.MkdirTemp("", "harness-console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeProfile(profile) })
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1200, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })

	p := &browserPage{t: t, ctx: ctx}
	// The first Run starts the browser; no timeout on it, or the timeout would end the browser.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium (%s) could not be started: %v", path, err)
		}
		t.Skipf("chromium (%s) could not be started: %v; install it with `apt-get install chromium` (under CI=true this fails)", path, err)
	}
	// Every document reports a CSP violation as a console error, which the collector below keeps:
	// the browser's own log of a refused resource is not reliable for everything the CSP blocks
	// (a style set through an attribute, for one), the securitypolicyviolation event is.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `document.addEventListener('securitypolicyviolation', (e) =>
				console.error('CSP violation: ' + e.violatedDirective + ' refused ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`,
		})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev, err := range chromedp.Events(ctx, network.RequestWillBeSent) {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.requests = append(p.requests, ev.Request.Method+" "+ev.Request.URL)
			p.mu.Unlock()
		}
	}()
	go collect(p, chromedp.Events(ctx, runtime.ExceptionThrown), func(ev runtime.EventExceptionThrown) string {
		return (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error()
	})
	go collect(p, chromedp.Events(ctx, runtime.ConsoleAPICalled), func(ev runtime.EventConsoleAPICalled) string {
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return ""
		}
		var parts []string
		for _, arg := range ev.Args {
			parts = append(parts, string(arg.Value)+arg.Description)
		}
		return "console.error: " + strings.Join(parts, " ")
	})
	// A refused script or style (CSP) is logged by the browser, not thrown. Answers of 4xx are
	// logged as network errors too; those are expected (409 when someone else answered first).
	go collect(p, chromedp.Events(ctx, log.EntryAdded), func(ev log.EventEntryAdded) string {
		if ev.Entry.Level != log.EntryLevelError || ev.Entry.Source == log.EntrySourceNetwork {
			return ""
		}
		return fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	})
	return p
}

// collect records the events that describe reports as errors, until the browser closes.
func collect[E any](p *browserPage, events iter.Seq2[E, error], describe func(E) string) {
	for ev, err := range events {
		if err != nil {
			return
		}
		if msg := describe(ev); msg != "" {
			p.mu.Lock()
			p.errors = append(p.errors, msg)
			p.mu.Unlock()
		}
	}
}

// requireNoPageErrors fails the test if a script threw, logged an error, or the browser refused
// something (a CSP violation is reported this way).
func (p *browserPage) requireNoPageErrors() {
	p.t.Helper()
	time.Sleep(100 * time.Millisecond) // let the last log events arrive; not an assertion
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errors) > 0 {
		p.t.Fatalf("the console raised errors in the browser:\n%s", strings.Join(p.errors, "\n"))
	}
}

// requestsSince returns the requests the page sent from the mark (a len of them, see requestMark)
// on whose "METHOD URL" match reports true. Before reading, the page sends one more request and
// its record is awaited: the browser reports requests in the order it sends them, so every
// request the page sent before is recorded by then.
func (p *browserPage) requestsSince(mark int, match func(string) bool) []string {
	p.t.Helper()
	sync := fmt.Sprintf("/v1/runtime?requests-recorded=%d", time.Now().UnixNano())
	p.evaluateVoid(fmt.Sprintf(`fetch(%q)`, sync))
	deadline := time.Now().Add(stepTimeout)
	for {
		p.mu.Lock()
		all := append([]string(nil), p.requests...)
		p.mu.Unlock()
		for i, r := range all {
			if !strings.HasSuffix(r, sync) {
				continue
			}
			var out []string
			for _, r := range all[min(mark, i):i] {
				if match(r) {
					out = append(out, r)
				}
			}
			return out
		}
		if time.Now().After(deadline) {
			p.t.Fatal("the page's last request was never reported by the browser")
		}
		time.Sleep(20 * time.Millisecond) // waiting for the browser's report, as waitJS polls
	}
}

// requestMark is where requestsSince starts: the number of requests recorded so far.
func (p *browserPage) requestMark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

// stepTimeout bounds one step so that a broken page fails the test instead of hanging it.
const stepTimeout = time.Minute

func (p *browserPage) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatal(err)
	}
}

// desktop puts the page back to a desk's viewport after a phone's. Not chromedp.EmulateReset:
// after mobile emulation it leaves headless Chromium laid out at the phone's width.
func (p *browserPage) desktop() {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(1200, 900))
	p.waitJS(`window.innerWidth === 1200`)
}

func (p *browserPage) navigate(url string) {
	p.t.Helper()
	p.do(chromedp.Navigate(url))
}

// waitJS waits until the expression is true in the page.
func (p *browserPage) waitJS(expr string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(0))); err != nil {
		p.t.Fatalf("waiting for %s: %v\npage text:\n%s", expr, err, p.bodyText())
	}
}

func (p *browserPage) bodyText() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return text
}

func evaluate[T any](p *browserPage, expr string, opts ...chromedp.EvaluateOption) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func (p *browserPage) evaluateVoid(expr string) {
	p.t.Helper()
	evaluate[chromedp.Void](p, expr)
}

// text is the text of the first element matching a CSS selector, "" when there is none.
func (p *browserPage) text(selector string) string {
	p.t.Helper()
	return evaluate[string](p, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ''`, selector))
}

// rendered reports whether an element matching selector is laid out (present and not hidden).
func (p *browserPage) rendered(selector string) bool {
	p.t.Helper()
	return evaluate[bool](p, fmt.Sprintf(`(document.querySelector(%q)?.getClientRects().length ?? 0) > 0`, selector))
}

func (p *browserPage) exists(selector string) bool {
	p.t.Helper()
	return evaluate[bool](p, fmt.Sprintf(`document.querySelector(%q) !== null`, selector))
}

// startFromPage fills the console's start form and submits it, and returns the id of the
// execution the page then shows.
func (p *browserPage) startFromPage(base, input, config string) string {
	p.t.Helper()
	p.navigate(base + "/console/#/new")
	p.waitJS(`document.querySelector('#capabilities table') !== null && document.querySelector('#provider').value === 'mock'`)
	p.do(
		chromedp.SetValue(chromedp.ID("input"), input),
		chromedp.SetValue(chromedp.ID("config"), config),
		chromedp.Click(chromedp.ID("start")),
	)
	p.waitJS(`location.hash.startsWith('#/executions/') && document.querySelector('#exec-state') !== null`)
	id := p.text("#exec-id")
	if !strings.HasPrefix(id, "exec_") {
		p.t.Fatalf("the page shows execution %q", id)
	}
	return id
}

// screenshot saves the viewport as PNG into $HARNESS_CONSOLE_SCREENSHOTS, when set.
func (p *browserPage) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("HARNESS_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// screenshotFull saves the whole page, beyond the viewport, as PNG into
// $HARNESS_CONSOLE_SCREENSHOTS, when set.
func (p *browserPage) screenshotFull(name string) {
	p.t.Helper()
	dir := os.Getenv("HARNESS_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// removeProfile removes the browser's profile; its helpers may still write for a moment after the
// browser stopped.
func removeProfile(dir string) {
	for range 50 {
		if err := os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleChatContextInBrowser drives the console in headless Chromium against the real
// binary (examples/Caddyfile, the mock provider) for what a chat product needs of it (issue 48):
// the conversation view opens at its latest turn with the message box in view, at desk and at
// phone width; an inbox row names the conversation and quotes the message that asked; a turn
// interrupted by a newer message says so, naming it; and an empty usage view says how usage
// arrives. Any script error or CSP violation fails the test.
func TestConsoleChatContextInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddy(t, bin, instanceEnv(t))
	c := &client{t: t, base: srv.url}
	page := openBrowser(t)

	// One after the other on the test's goroutine: page and c fail the test itself.
	consoleUsageEmpty(t, page, c, srv.url)
	consoleOpensAtLatestTurn(t, page, c, srv.url)
	consoleInboxRowContext(t, page, c, srv.url)
	consoleInterruptedTurn(t, page, c, srv.url)
	page.requireNoPageErrors()
}

// consoleOpensAtLatestTurn: a conversation of many long turns, taller than the screen, opens
// scrolled to its end: the last turn and the Send button are in the viewport, on a desk and on a
// 390-px phone.
func consoleOpensAtLatestTurn(t *testing.T, page *browserPage, c *client, base string) {
	conv := c.post("/v1/conversations", map[string]any{"busyPolicy": "enqueue"}, http.StatusCreated)["id"].(string)
	var last string
	for i := range 12 {
		input := fmt.Sprintf("turn %d: %s", i, strings.Repeat("a rather long message that wraps over several lines ", 4))
		last = c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": input}, http.StatusAccepted)["id"].(string)
	}
	c.awaitEnd(last)
	check := func(width, height int, shot string) {
		t.Helper()
		page.navigate(base + "/console/#/")
		page.waitJS(`document.querySelector('#main h2') !== null`)
		page.navigate(base + "/console/#/conversations/" + conv) // a hash change, as a click on a link is
		page.waitJS(fmt.Sprintf(`document.querySelector('#conversation-status')?.dataset.opened === 'true' &&
			document.querySelectorAll('#transcript li.turn').length === 12 && document.querySelector('li.turn[data-id=%q] .msg.reply.ok') !== null`, last))
		if tall := evaluate[int](page, `document.documentElement.scrollHeight - window.innerHeight`); tall <= 0 {
			t.Fatalf("at %dx%d the conversation fits the screen (%d px): the test shows nothing", width, height, tall)
		}
		type box struct{ Top, Bottom, ScrollY, Height float64 }
		in := func(selector string) box {
			return evaluate[box](page, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
				return { top: r.top, bottom: r.bottom, scrollY: window.scrollY, height: window.innerHeight }; })()`, selector))
		}
		send := in("#send")
		if send.Top < 0 || send.Bottom > send.Height {
			t.Fatalf("at %dx%d the Send button is at %.0f–%.0f of a %.0f-px viewport (scrolled %.0f): not in view", width, height, send.Top, send.Bottom, send.Height, send.ScrollY)
		}
		lastTurn := in(fmt.Sprintf(`li.turn[data-id=%q] .msg.reply`, last))
		if lastTurn.Top < 0 || lastTurn.Bottom > lastTurn.Height {
			t.Fatalf("at %dx%d the latest turn's reply is at %.0f–%.0f of a %.0f-px viewport: not in view", width, height, lastTurn.Top, lastTurn.Bottom, lastTurn.Height)
		}
		if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Fatalf("at %dx%d the conversation is %d px wider than the screen", width, height, overflow)
		}
		page.screenshot(shot)
	}
	check(1200, 900, "conversation-latest-desktop.png")
	page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	page.waitJS(`window.innerWidth === 390`)
	check(390, 844, "conversation-latest-phone.png")
	page.desktop()
}

// consoleInboxRowContext: an inbox row names the conversation (linked to the chat; its title
// when the server keeps one) and quotes the message that asked, shortened; the execution id is
// still there, as a link. At phone width the row fits the screen.
func consoleInboxRowContext(t *testing.T, page *browserPage, c *client, base string) {
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	input := "Please delete the old backups in /srv/backups, keep the last three, and then tell me how much space it freed " +
		strings.Repeat("(and more words that make the message long) ", 5)
	exec := c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": input,
		"config": map[string]any{"requireApproval": true}}, http.StatusAccepted)["id"].(string)
	action := pendingActionID(t, c, exec)
	row := fmt.Sprintf(`#inbox-body tr[data-id=%q]`, action)

	page.navigate(base + "/console/#/inbox")
	page.waitJS(fmt.Sprintf(`(document.querySelector('%s td.context .asked')?.textContent ?? '') !== ''`, row))
	asked := page.text(row + " td.context .asked")
	if !strings.HasPrefix(asked, "“Please delete the old backups in /srv/backups, keep the last three") || !strings.HasSuffix(asked, "…”") || len([]rune(asked)) > 145 {
		t.Fatalf("the row quotes the message that asked as %q, want its beginning, shortened", asked)
	}
	name := conv
	if title, ok := c.get("/v1/conversations/" + conv)["title"].(string); ok && title != "" {
		name = title
	}
	page.waitJS(fmt.Sprintf(`document.querySelector('%s td.context a.conversation')?.textContent === %q`, row, name))
	if href := evaluate[string](page, fmt.Sprintf(`document.querySelector('%s td.context a.conversation').getAttribute('href')`, row)); href != "#/conversations/"+conv {
		t.Fatalf("the conversation link goes to %q", href)
	}
	if !page.exists(fmt.Sprintf(`%s a[href=%q]`, row, "#/executions/"+exec)) {
		t.Fatal("the row no longer links to its execution")
	}
	page.screenshot("inbox-context-desktop.png")

	page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	page.waitJS(`window.innerWidth === 390`)
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at phone width the inbox is %d px wider than the screen", overflow)
	}
	if !page.rendered(row + " td.context .asked") {
		t.Fatal("at phone width the message that asked is not shown")
	}
	page.screenshot("inbox-context-phone.png")
	page.desktop()
	c.post("/v1/executions/"+exec+":cancel", map[string]any{}, http.StatusOK) // leaves the inbox to the next test
}

// consoleInterruptedTurn: on an interrupt conversation, a message sent while a turn waits for
// approval cancels that turn; its transcript entry says it was interrupted and by which turn
// (the snapshot's cancelReason, also after a reload), as does its execution page.
func consoleInterruptedTurn(t *testing.T, page *browserPage, c *client, base string) {
	conv := c.post("/v1/conversations", map[string]any{"busyPolicy": "interrupt"}, http.StatusCreated)["id"].(string)
	page.navigate(base + "/console/#/conversations/" + conv)
	page.waitJS(`document.querySelector('#message-form')?.dataset.policy === 'interrupt' &&
		document.querySelector('#message-provider')?.value === 'mock' && document.querySelector('#transcript-empty') !== null`)
	first := page.sendMessage("delete everything", `{"requireApproval":true}`, true)
	page.waitJS(fmt.Sprintf(`document.querySelector('#action-%s-approve') !== null`, first))
	second := page.sendMessage("no, wait: only the old files", `{}`, false)
	if got, want := page.text("#message-result"), fmt.Sprintf("Sent as %s: it interrupts %s, then is answered.", second, first); got != want {
		t.Fatalf("the message box said %q, want %q", got, want)
	}
	reply := fmt.Sprintf(`li.turn[data-id=%q] .msg.reply .interrupted`, first)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s')?.dataset.interruptedBy === %q`, reply, second))
	want := "Interrupted by " + second + ": a newer message cancelled this turn."
	if got := page.text(reply); got != want {
		t.Fatalf("the interrupted turn says %q, want %q", got, want)
	}
	page.screenshotFull("conversation-interrupted.png")
	// From the stored snapshot (a fresh view reads the listing), and on the execution's page.
	page.navigate(base + "/console/#/")
	page.navigate(base + "/console/#/conversations/" + conv)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s')?.textContent === %q`, reply, want))
	page.navigate(base + "/console/#/executions/" + first)
	page.waitJS(fmt.Sprintf(`document.querySelector('#final')?.textContent === %q`, want))
}

// consoleUsageEmpty: with no usage reported in the window (the mock reports none unless its
// config has usage), the overview says how usage arrives; once an execution reports usage, it
// shows the tokens and the explanation goes.
func consoleUsageEmpty(t *testing.T, page *browserPage, c *client, base string) {
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	c.awaitEnd(c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": "no usage"}, http.StatusAccepted)["id"].(string))
	page.navigate(base + "/console/#/overview")
	page.waitJS(`document.getElementById('ov-tokens')?.textContent === '0' && document.getElementById('ov-usage-empty')?.hidden === false`)
	if got := page.text("#ov-usage-empty"); !strings.Contains(got, "Usage is what the agents report") || !strings.Contains(got, `the mock only when the execution's config has usage`) {
		t.Fatalf("the empty usage view says %q", got)
	}
	page.screenshot("overview-usage-empty.png")
	c.awaitEnd(c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock", "input": "with usage",
		"config": map[string]any{"usage": map[string]any{"inputTokens": 10, "outputTokens": 5}}}, http.StatusAccepted)["id"].(string))
	page.waitJS(`document.getElementById('ov-tokens')?.textContent !== '0' && document.getElementById('ov-usage-empty')?.hidden === true`)
}

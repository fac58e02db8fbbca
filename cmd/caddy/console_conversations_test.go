package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// conversationRow is a row of the console's Conversations page as the test reads it.
type conversationRow struct {
	ID, Name, Input, Output, State, Count string
}

// readConversationRows is what the page's list shows, top to bottom.
const readConversationRows = `[...document.querySelectorAll('#conversations li.conversation-row')].map((li) => ({
	id: li.dataset.id,
	name: li.querySelector('.conversation-name a').textContent,
	input: li.querySelector('.preview-input')?.textContent ?? '',
	output: li.querySelector('.preview-output')?.textContent ?? '',
	state: li.querySelector('.conversation-facts .state')?.textContent ?? '',
	count: li.querySelector('.conversation-facts .count').textContent }))`

// TestConsoleConversationsInBrowser drives the console's Conversations page in headless Chromium
// against the real binary (examples/Caddyfile, the mock provider), at a desk's 1280 px and a
// 390-px phone: the tenant's conversations as the server lists them (newest activity first, the
// title or a fallback, previews, the latest state, the execution count), More for the next page,
// a turn started elsewhere (over HTTP) moving its conversation to the top without a reload, New
// chat opening the new conversation with the message box focused and in view, and a rename from
// the list and from the conversation view. Any script error or CSP violation fails the test.
func TestConsoleConversationsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddy(t, bin, instanceEnv(t))
	c := &client{t: t, base: srv.url}
	page := openBrowser(t)

	// 23 conversations: more than the page's 20. The oldest has a titled, answered turn; one has
	// no turns at all.
	var convs []string
	for i := range 23 {
		id := c.post("/v1/conversations", map[string]any{"busyPolicy": "enqueue"}, http.StatusCreated)["id"].(string)
		convs = append(convs, id)
		if i == 0 {
			c.request(http.MethodPatch, "/v1/conversations/"+id, map[string]any{"title": "Trip planning"}, http.StatusOK)
		}
		if i != 5 {
			exec := c.post("/v1/executions", map[string]any{"conversationId": id, "providerId": "mock", "input": fmt.Sprintf("question %d", i)}, http.StatusAccepted)["id"].(string)
			c.awaitEnd(exec)
		}
	}

	page.navigate(srv.url + "/console/#/")
	for i, width := range []int{1280, 390} {
		if width == 390 {
			page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		} else {
			page.do(chromedp.EmulateViewport(1280, 900))
		}
		page.waitJS(fmt.Sprintf(`window.innerWidth === %d`, width))
		conversationsListed(t, page, c, srv.url, width)
		conversationsLive(t, page, c, convs[i], width) // one not at the top
		conversationsNewChat(t, page, c, srv.url, width)
		conversationsRename(t, page, c, srv.url, width)
	}
	page.desktop()
	page.requireNoPageErrors()
}

// serverConversations is GET /v1/conversations, every page, in the server's order.
func serverConversations(t *testing.T, c *client) []map[string]any {
	t.Helper()
	var all []map[string]any
	after := ""
	for {
		path := "/v1/conversations?limit=200"
		if after != "" {
			path += "&after=" + after
		}
		var page struct {
			Conversations []map[string]any `json:"conversations"`
			NextCursor    string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(c.getRaw(path), &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Conversations...)
		if page.NextCursor == "" {
			return all
		}
		after = page.NextCursor
	}
}

// wantRow is how the page should show the server's summary s.
func wantRow(s map[string]any) conversationRow {
	r := conversationRow{ID: s["id"].(string), Name: "Untitled conversation"}
	if title, ok := s["title"].(string); ok && title != "" {
		r.Name = title
	}
	n := int(s["executionCount"].(float64))
	r.Count = fmt.Sprintf("%d executions", n)
	if n == 1 {
		r.Count = "1 execution"
	}
	if x, ok := s["latestExecution"].(map[string]any); ok {
		r.Input = x["inputPreview"].(string)
		r.State = strings.ReplaceAll(x["state"].(string), "_", " ")
		if out, ok := x["outputPreview"].(string); ok {
			r.Output = out
		}
	}
	return r
}

// conversationsListed: the page opened from the navigation shows the server's first page as the
// server orders and describes it; More adds the rest; nothing is wider than the screen.
func conversationsListed(t *testing.T, page *browserPage, c *client, base string, width int) {
	t.Helper()
	page.navigate(base + "/console/#/")
	page.waitJS(`document.querySelector('#nav-conversations') !== null`)
	page.evaluateVoid(`document.getElementById('nav-conversations').click()`)
	page.waitJS(`document.querySelectorAll('#conversations li.conversation-row').length === 20 &&
		document.querySelector('#conversations-status')?.dataset.live === 'true'`)
	if cur := evaluate[string](page, `document.getElementById('nav-conversations').getAttribute('aria-current') ?? ''`); cur != "page" {
		t.Fatalf("the navigation does not mark Conversations as the current page (%q)", cur)
	}
	all := serverConversations(t, c)
	requireRows(t, page, all[:20], width, "first page")
	if !page.rendered("#conversations-more") {
		t.Fatalf("at %d px there is no More button under a full first page", width)
	}
	page.evaluateVoid(`document.getElementById('conversations-more').click()`)
	page.waitJS(fmt.Sprintf(`document.querySelectorAll('#conversations li.conversation-row').length === %d`, len(all)))
	requireRows(t, page, all, width, "after More")
	if page.rendered("#conversations-more") {
		t.Fatalf("at %d px More is still offered after the last page", width)
	}
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at %d px the Conversations page is %d px wider than the screen", width, overflow)
	}
	page.screenshot(fmt.Sprintf("conversations-%d.png", width))
}

func requireRows(t *testing.T, page *browserPage, want []map[string]any, width int, when string) {
	t.Helper()
	got := evaluate[[]conversationRow](page, readConversationRows)
	if len(got) != len(want) {
		t.Fatalf("at %d px, %s: the page lists %d conversations, the server %d", width, when, len(got), len(want))
	}
	for i := range want {
		if w := wantRow(want[i]); got[i] != w {
			t.Fatalf("at %d px, %s: row %d is %+v, want %+v (the server's order and summary)", width, when, i, got[i], w)
		}
	}
}

// conversationsLive: a turn started over HTTP in the conversation at the bottom moves it to the
// top, and its end shows the reply, on the page as it is (no reload: a mark left in the page
// survives).
func conversationsLive(t *testing.T, page *browserPage, c *client, conv string, width int) {
	t.Helper()
	if pos := evaluate[int](page, fmt.Sprintf(`[...document.querySelectorAll('#conversations li.conversation-row')].findIndex((li) => li.dataset.id === %q)`, conv)); pos < 1 {
		t.Fatalf("at %d px the conversation to be moved is at %d, not below the top", width, pos)
	}
	page.evaluateVoid(`window.notReloaded = true`)
	exec := c.post("/v1/executions", map[string]any{"conversationId": conv, "providerId": "mock",
		"input": fmt.Sprintf("live at %d px", width), "config": map[string]any{"requireApproval": true}}, http.StatusAccepted)["id"].(string)
	first := `document.querySelector('#conversations li.conversation-row')`
	page.waitJS(fmt.Sprintf(`%s?.dataset.id === %q && %s.querySelector('.preview-input')?.textContent === %q &&
		%s.querySelector('.conversation-facts .state')?.textContent === 'awaiting approval'`, first, conv, first, fmt.Sprintf("live at %d px", width), first))
	action := pendingActionID(t, c, exec)
	c.post("/v1/executions/"+exec+"/actions/"+action+":respond", map[string]any{"decision": "approve"}, http.StatusOK)
	page.waitJS(fmt.Sprintf(`%s.querySelector('.preview-output')?.textContent === %q && %s.querySelector('.conversation-facts .state')?.textContent === 'succeeded'`,
		first, fmt.Sprintf("Echo: live at %d px", width), first))
	if !evaluate[bool](page, `window.notReloaded === true`) {
		t.Fatalf("at %d px the page was reloaded to show the change", width)
	}
	all := serverConversations(t, c)
	page.waitJS(fmt.Sprintf(`document.querySelectorAll('#conversations li.conversation-row').length === %d`, len(all)))
	requireRows(t, page, all, width, "after a turn elsewhere")
}

// conversationsNewChat: New chat with a title creates a conversation with that title and the
// chosen busy policy and opens it, the message box focused and in view; a first message sent
// there puts it at the top of the list.
func conversationsNewChat(t *testing.T, page *browserPage, c *client, base string, width int) {
	t.Helper()
	title := fmt.Sprintf("Chat begun at %d px", width)
	page.do(chromedp.SetValue(chromedp.ID("new-chat-title"), title), chromedp.SetValue(chromedp.ID("new-chat-policy"), "reject"))
	page.evaluateVoid(`document.getElementById('new-chat').click()`)
	page.waitJS(`location.hash.startsWith('#/conversations/conv_') && document.querySelector('#conversation-status')?.dataset.opened === 'true'`)
	conv := strings.TrimPrefix(evaluate[string](page, `location.hash`), "#/conversations/")
	got := c.get("/v1/conversations/" + conv)
	if got["title"] != title || got["busyPolicy"] != "reject" {
		t.Fatalf("New chat created %v, want title %q and busyPolicy reject", got, title)
	}
	page.waitJS(fmt.Sprintf(`document.querySelector('#conversation-title')?.textContent === %q`, title))
	if focused := evaluate[string](page, `document.activeElement?.id ?? ''`); focused != "message" {
		t.Fatalf("at %d px the new chat has the focus on %q, not the message box", width, focused)
	}
	type box struct{ Top, Bottom, Height float64 }
	for _, sel := range []string{"#message", "#send"} {
		b := evaluate[box](page, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return { top: r.top, bottom: r.bottom, height: window.innerHeight }; })()`, sel))
		if b.Top < 0 || b.Bottom > b.Height {
			t.Fatalf("at %d px %s is at %.0f–%.0f of a %.0f-px viewport: not in view", width, sel, b.Top, b.Bottom, b.Height)
		}
	}
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at %d px the new chat is %d px wider than the screen", width, overflow)
	}
	page.screenshot(fmt.Sprintf("new-chat-%d.png", width))
	page.waitJS(`document.querySelector('#message-provider')?.value === 'mock'`)
	page.sendMessage("first words", `{}`, true)
	page.evaluateVoid(`document.getElementById('nav-conversations').click()`)
	first := `document.querySelector('#conversations li.conversation-row')`
	page.waitJS(fmt.Sprintf(`%s?.dataset.id === %q && %s.querySelector('.conversation-name a').textContent === %q &&
		%s.querySelector('.preview-output')?.textContent === 'Echo: first words'`, first, conv, first, title, first))
}

// conversationsRename: a rename from the list's row and one from the conversation view both
// reach the server and show at once; an empty title removes it.
func conversationsRename(t *testing.T, page *browserPage, c *client, base string, width int) {
	t.Helper()
	conv := evaluate[string](page, `document.querySelector('#conversations li.conversation-row').dataset.id`)
	row := fmt.Sprintf(`#conversations li.conversation-row[data-id=%q]`, conv)
	listTitle := fmt.Sprintf("Renamed in the list at %d px", width)
	page.evaluateVoid(fmt.Sprintf(`document.querySelector('%s [data-manage="rename"]').click()`, row))
	page.waitJS(fmt.Sprintf(`document.activeElement === document.querySelector('%s input[name="title"]')`, row))
	page.do(chromedp.SetValue(chromedp.CSS(row+` input[name="title"]`), listTitle))
	page.evaluateVoid(fmt.Sprintf(`document.querySelector('%s [data-manage="save"]').click()`, row))
	page.waitJS(fmt.Sprintf(`document.querySelector('%s .conversation-name a')?.textContent === %q`, row, listTitle))
	if got := c.get("/v1/conversations/" + conv)["title"]; got != listTitle {
		t.Fatalf("after a rename in the list the server has title %v, want %q", got, listTitle)
	}
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at %d px the list with a rename is %d px wider than the screen", width, overflow)
	}

	page.navigate(base + "/console/#/conversations/" + conv)
	page.waitJS(fmt.Sprintf(`document.querySelector('#conversation-title')?.textContent === %q`, listTitle))
	viewTitle := fmt.Sprintf("Renamed in the chat at %d px", width)
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="rename"]').click()`)
	page.do(chromedp.SetValue(chromedp.CSS(`#conversation-manage input[name="title"]`), viewTitle))
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="save"]').click()`)
	page.waitJS(fmt.Sprintf(`document.querySelector('#conversation-title')?.textContent === %q`, viewTitle))
	if got := c.get("/v1/conversations/" + conv)["title"]; got != viewTitle {
		t.Fatalf("after a rename in the chat the server has title %v, want %q", got, viewTitle)
	}
	page.screenshot(fmt.Sprintf("conversation-renamed-%d.png", width))
	// An empty title (spaces only) removes it: the fallback name shows, here and in the list.
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="rename"]').click()`)
	page.do(chromedp.SetValue(chromedp.CSS(`#conversation-manage input[name="title"]`), "   "))
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="save"]').click()`)
	page.waitJS(`document.querySelector('#conversation-title')?.textContent === 'Untitled conversation'`)
	if got, ok := c.get("/v1/conversations/" + conv)["title"]; ok {
		t.Fatalf("after an empty rename the server still has title %v", got)
	}
	page.navigate(base + "/console/#/conversations")
	page.waitJS(fmt.Sprintf(`document.querySelector('%s .conversation-name a')?.textContent === 'Untitled conversation'`, row))
}

// TestConsoleConversationDeleteInBrowser: Delete asks first (Keep leaves the conversation), then
// deletes an idle conversation from the list (its row goes, the server answers 404 for it); in
// the conversation view of one with a running turn, at phone width, the server's 409
// CONVERSATION_BUSY is said with the turn, and "Cancel running and delete" deletes it
// (DELETE …?cancel=true) and returns to the list, which says so. A conversation deleted
// elsewhere leaves the open list at once, its executions leave the executions list, and an open
// conversation view says it was deleted (the streams' conversation.deleted message).
func TestConsoleConversationDeleteInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddy(t, bin, instanceEnv(t))
	c := &client{t: t, base: srv.url}
	page := openBrowser(t)

	idle := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	c.request(http.MethodPatch, "/v1/conversations/"+idle, map[string]any{"title": "To be deleted"}, http.StatusOK)
	c.awaitEnd(c.post("/v1/executions", map[string]any{"conversationId": idle, "providerId": "mock", "input": "forget me"}, http.StatusAccepted)["id"].(string))
	busy := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	running := c.post("/v1/executions", map[string]any{"conversationId": busy, "providerId": "mock", "input": "slow",
		"config": map[string]any{"delayMs": 600000}}, http.StatusAccepted)["id"].(string)

	page.navigate(srv.url + "/console/#/conversations")
	page.do(chromedp.EmulateViewport(1280, 900))
	page.waitJS(`window.innerWidth === 1280`)
	row := fmt.Sprintf(`#conversations li.conversation-row[data-id=%q]`, idle)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s') !== null`, row))
	page.evaluateVoid(fmt.Sprintf(`document.querySelector('%s [data-manage="delete"]').click()`, row))
	page.waitJS(fmt.Sprintf(`document.activeElement === document.querySelector('%s [data-manage="keep"]')`, row))
	if text := page.text(row + ` .manage-confirm-text`); !strings.Contains(text, "“To be deleted”") || !strings.Contains(text, "cannot be undone") {
		t.Fatalf("the confirm says %q", text)
	}
	page.evaluateVoid(fmt.Sprintf(`document.querySelector('%s [data-manage="keep"]').click()`, row))
	page.waitJS(fmt.Sprintf(`document.querySelector('%s [data-manage="confirm"]').hidden`, row))
	c.get("/v1/conversations/" + idle) // Keep kept it
	page.evaluateVoid(fmt.Sprintf(`document.querySelector('%s [data-manage="delete"]').click()`, row))
	page.evaluateVoid(fmt.Sprintf(`document.querySelector('%s [data-manage="confirm-delete"]').click()`, row))
	page.waitJS(fmt.Sprintf(`document.querySelector('%s') === null && document.querySelector('#conversations-result').textContent === %q`,
		row, fmt.Sprintf("Deleted “To be deleted” (%s).", idle)))
	c.request(http.MethodGet, "/v1/conversations/"+idle, nil, http.StatusNotFound)

	page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	page.waitJS(`window.innerWidth === 390`)
	page.navigate(srv.url + "/console/#/conversations/" + busy)
	page.waitJS(`document.querySelector('#conversation-manage [data-manage="delete"]') !== null`)
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="delete"]').click()`)
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="confirm-delete"]').click()`)
	page.waitJS(`document.querySelector('#conversation-manage [data-manage="cancel-and-delete"]') !== null`)
	if text := page.text(`#conversation-manage .manage-confirm-text`); !strings.Contains(text, running) || !strings.Contains(text, "CONVERSATION_BUSY") {
		t.Fatalf("the busy answer is said as %q, want the running turn %s and CONVERSATION_BUSY", text, running)
	}
	c.get("/v1/conversations/" + busy) // refused: still there
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at phone width the busy answer makes the page %d px wider than the screen", overflow)
	}
	page.evaluateVoid(`document.querySelector('#conversation-manage').scrollIntoView()`)
	page.screenshot("conversation-delete-busy-390.png")
	page.evaluateVoid(`document.querySelector('#conversation-manage [data-manage="cancel-and-delete"]').click()`)
	page.waitJS(fmt.Sprintf(`location.hash === '#/conversations' && document.querySelector('#conversations-result')?.textContent === %q &&
		document.querySelector('#conversations-status')?.dataset.live === 'true'`, fmt.Sprintf("Deleted “Untitled conversation” (%s).", busy)))
	if page.exists(fmt.Sprintf(`#conversations li.conversation-row[data-id=%q]`, busy)) {
		t.Fatal("the deleted conversation is still listed")
	}
	c.request(http.MethodGet, "/v1/conversations/"+busy, nil, http.StatusNotFound)
	c.request(http.MethodGet, "/v1/executions/"+running, nil, http.StatusNotFound)

	// Deleted elsewhere (over HTTP): the list drops the row, an open conversation says so.
	page.desktop()
	elsewhere := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	c.awaitEnd(c.post("/v1/executions", map[string]any{"conversationId": elsewhere, "providerId": "mock", "input": "hi"}, http.StatusAccepted)["id"].(string))
	other := fmt.Sprintf(`#conversations li.conversation-row[data-id=%q]`, elsewhere)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s') !== null`, other))
	page.evaluateVoid(`window.notReloaded = true`)
	c.request(http.MethodDelete, "/v1/conversations/"+elsewhere, nil, http.StatusOK)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s') === null && window.notReloaded === true`, other))

	// The executions list drops the rows of a conversation deleted elsewhere.
	gone := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	goneExec := c.post("/v1/executions", map[string]any{"conversationId": gone, "providerId": "mock", "input": "erase me"}, http.StatusAccepted)["id"].(string)
	c.awaitEnd(goneExec)
	page.navigate(srv.url + "/console/#/")
	execRow := fmt.Sprintf(`#list-body tr[data-id=%q]`, goneExec)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s') !== null && document.querySelector('#list-status')?.dataset.live === 'true'`, execRow))
	page.evaluateVoid(`window.notReloaded = true`)
	c.request(http.MethodDelete, "/v1/conversations/"+gone, nil, http.StatusOK)
	page.waitJS(fmt.Sprintf(`document.querySelector('%s') === null && window.notReloaded === true`, execRow))

	open := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	page.navigate(srv.url + "/console/#/conversations/" + open)
	page.waitJS(`document.querySelector('#conversation-status')?.dataset.live === 'true'`)
	c.request(http.MethodDelete, "/v1/conversations/"+open, nil, http.StatusOK)
	page.waitJS(`document.querySelector('#conversation-deleted') !== null && document.querySelector('#message-form').hidden`)
	page.requireNoPageErrors()
}

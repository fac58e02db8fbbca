package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// The conversation view as a chat, in TestConsoleInBrowser: the message box under the transcript
// starts the next turn, the conversation's busy policy decides what a message sent while a turn
// runs does, and a turn's question is answered in the transcript. The first turn asks for
// approval, so it runs until the page answers it, whatever the machine's speed.

// consoleChatEnqueue: on an enqueue conversation two messages in a row; the second is shown
// queued, waiting for the first; the first is approved in the transcript and both are answered,
// in order.
func consoleChatEnqueue(t *testing.T, page *browserPage, c *client, base string) {
	conv := c.post("/v1/conversations", map[string]any{"busyPolicy": "enqueue"}, http.StatusCreated)["id"].(string)
	page.navigate(base + "/console/#/conversations/" + conv)
	page.waitJS(`document.querySelector('#message-form')?.dataset.policy === 'enqueue' &&
		document.querySelector('#message-provider')?.value === 'mock' && document.querySelector('#transcript-empty') !== null`)
	if got := page.text("#conversation-policy"); !strings.Contains(got, "Busy policy: enqueue — a message sent while a turn is running waits for it") {
		t.Fatalf("the policy shown: %q", got)
	}

	// The first message, sent with Enter as a person types it.
	first := page.sendMessage("first message", `{"requireApproval":true}`, true)
	page.waitJS(fmt.Sprintf(`document.querySelector('#transcript li.turn[data-id=%q]')?.dataset.state === 'awaiting_approval' &&
		document.querySelector('#action-%s-approve') !== null`, first, first))

	// The second, while the first waits for its answer: queued behind it.
	second := page.sendMessage("second message", `{}`, false)
	if got := page.text("#message-result"); got != fmt.Sprintf("Sent as %s: queued, it waits for %s to end.", second, first) {
		t.Fatalf("the message box said %q", got)
	}
	page.waitJS(fmt.Sprintf(`document.querySelector('#transcript li.turn[data-id=%q] .msg.reply.queued')?.dataset.waitingFor === %q`, second, first))
	if got := page.text(fmt.Sprintf(`li.turn[data-id=%q] .msg.reply`, second)); got != "Queued: waits for "+first+" to end." {
		t.Fatalf("the queued turn says %q", got)
	}
	if got := page.text("#message"); got != "" || evaluate[string](page, `document.getElementById('message').value`) != "" {
		t.Fatal("the message box kept a message that was sent")
	}
	page.screenshotFull("conversation-chat.png")

	// The first turn's question, answered in the transcript with the keyboard.
	page.do(chromedp.Focus(chromedp.ID("action-"+first+"-approve")), chromedp.KeyEvent(kb.Enter))
	page.waitJS(fmt.Sprintf(`document.querySelector('li.turn[data-id=%q] .msg.reply')?.textContent === 'Echo: first message' &&
		document.querySelector('li.turn[data-id=%q] .msg.reply')?.textContent === 'Echo: second message'`, first, second))
	if got := page.text("#action-" + first + "-result"); !strings.HasPrefix(got, "You approved") {
		t.Fatalf("the answer's result %q", got)
	}
	if page.exists("#action-" + first + "-approve") {
		t.Fatal("the approve button is still shown after the turn was answered")
	}
	order := evaluate[[]string](page, `[...document.querySelectorAll('#transcript li.turn')].map(li => li.dataset.id)`)
	if strings.Join(order, " ") != first+" "+second {
		t.Fatalf("transcript order %v, want %s %s", order, first, second)
	}
	// The server ran them one after the other: the second started once the first had ended.
	firstEnd, secondStart := eventTime(t, c, first, api.StandardEventTypeRunCompleted), eventTime(t, c, second, api.StandardEventTypeRunStarted)
	if secondStart < firstEnd {
		t.Fatalf("the queued turn started at %s, before the first ended at %s", secondStart, firstEnd)
	}
}

// consoleChatReject: a conversation created from the start form with the reject policy; a second
// message while the first runs is refused with CONVERSATION_BUSY, said in the page, and kept in
// the box; once the first is answered, sending it again is accepted.
func consoleChatReject(t *testing.T, page *browserPage, c *client, base string) {
	page.navigate(base + "/console/#/new")
	page.waitJS(`document.querySelector('#capabilities table') !== null && document.querySelector('#provider').value === 'mock'`)
	page.do(
		chromedp.SetValue(chromedp.ID("input"), "first message"),
		chromedp.SetValue(chromedp.ID("config"), `{"requireApproval":true}`),
		chromedp.SetValue(chromedp.ID("busy-policy"), "reject"),
		chromedp.Click(chromedp.ID("start")),
	)
	page.waitJS(`document.querySelector('#exec-state')?.textContent === 'awaiting approval'`)
	first := page.text("#exec-id")
	conv := page.text("#exec-conversation")
	if got := c.get("/v1/conversations/" + conv)["busyPolicy"]; got != "reject" {
		t.Fatalf("the start form created a conversation with policy %v, want reject", got)
	}
	page.evaluateVoid(`document.getElementById('exec-conversation').click()`)
	page.waitJS(fmt.Sprintf(`document.querySelector('#message-form')?.dataset.policy === 'reject' &&
		document.querySelector('#action-%s-approve') !== null`, first))

	page.do(chromedp.SetValue(chromedp.ID("message"), "second message"), chromedp.Click(chromedp.ID("send")))
	page.waitJS(`document.querySelector('#message-result')?.dataset.code === 'CONVERSATION_BUSY'`)
	if got := page.text("#message-result"); !strings.Contains(got, "the conversation is busy (CONVERSATION_BUSY): "+first+" has not ended") ||
		!strings.Contains(got, "Your message is kept in the box") {
		t.Fatalf("the refusal said %q", got)
	}
	if got := evaluate[string](page, `document.getElementById('message').value`); got != "second message" {
		t.Fatalf("the box holds %q after the refusal, want the message kept", got)
	}
	var list api.ExecutionList
	if err := json.Unmarshal(c.getRaw("/v1/conversations/"+conv+"/executions"), &list); err != nil || len(list.Executions) != 1 {
		t.Fatalf("the conversation has %d executions (%v), want the refused message not started", len(list.Executions), err)
	}

	// At phone width the message box fits the screen.
	page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	page.waitJS(`window.innerWidth === 390`)
	if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Fatalf("at phone width the conversation is %d px wider than the screen", overflow)
	}
	if !page.rendered("#send") || !page.rendered("#action-"+first+"-approve") {
		t.Fatal("at phone width the send or approve button is not shown")
	}
	page.desktop()

	page.do(chromedp.Click(chromedp.ID("action-" + first + "-approve")))
	page.waitJS(fmt.Sprintf(`document.querySelector('li.turn[data-id=%q] .msg.reply')?.textContent === 'Echo: first message'`, first))
	page.do(chromedp.Click(chromedp.ID("send")))
	page.waitJS(`document.querySelectorAll('#transcript li.turn').length === 2 &&
		document.querySelector('#transcript li.turn:last-child .msg.reply')?.textContent === 'Echo: second message'`)
	if got := evaluate[string](page, `document.getElementById('message').value`); got != "" {
		t.Fatalf("the box holds %q once the message was sent", got)
	}
}

// consoleChatLive: the conversation view follows the conversation's one stream: a second turn's
// reply is shown as it is written (before the turn has ended), and the listing is read once, when
// the view opens, however many turns and events follow.
func consoleChatLive(t *testing.T, page *browserPage, c *client, base string) {
	conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)["id"].(string)
	mark := page.requestMark()
	page.navigate(base + "/console/#/conversations/" + conv)
	page.waitJS(`document.querySelector('#conversation-status')?.dataset.live === 'true' &&
		document.querySelector('#message-provider')?.value === 'mock' && document.querySelector('#transcript-empty') !== null`)

	first := page.sendMessage("first turn", `{}`, true)
	page.waitJS(fmt.Sprintf(`document.querySelector('li.turn[data-id=%q] .msg.reply')?.textContent === 'Echo: first turn'`, first))

	// Every text the second turn's reply shows while it is being written, recorded by the page as
	// it changes (a MutationObserver sees each change, however fast the turn runs).
	page.evaluateVoid(`(() => {
		window.liveTexts = [];
		new MutationObserver(() => {
			for (const el of document.querySelectorAll('#transcript .msg.reply[data-live="true"]')) {
				const li = el.closest('li.turn');
				window.liveTexts.push({ id: li.dataset.id, state: li.dataset.state, text: el.textContent });
			}
		}).observe(document.getElementById('transcript'), { childList: true, subtree: true, characterData: true });
	})()`)
	const words = "one two three four five six seven eight"
	second := page.sendMessage(words, `{"delayMs": 40}`, false)
	page.waitJS(fmt.Sprintf(`document.querySelector('li.turn[data-id=%q] .msg.reply')?.textContent === 'Echo: %s'`, second, words))
	type seen struct{ ID, State, Text string }
	partial := 0
	for _, s := range evaluate[[]seen](page, `window.liveTexts`) {
		if s.ID != second || s.State == "succeeded" {
			t.Fatalf("a reply shown as being written: %+v", s)
		}
		if full := "Echo: " + words; s.Text != full && strings.HasPrefix(full, s.Text) {
			partial++
		}
	}
	if partial < 2 {
		t.Fatalf("the second turn's reply was shown %d times part-written, want it written live: %v", partial, evaluate[any](page, `window.liveTexts`))
	}
	isListing := func(r string) bool {
		return strings.HasPrefix(r, "GET "+base+"/v1/conversations/"+conv+"/executions") || strings.HasPrefix(r, "GET "+base+"/v1/executions?")
	}
	if listings := page.requestsSince(mark, isListing); len(listings) != 1 {
		t.Fatalf("the conversation view read the listing %d times over two turns, want once: %v", len(listings), listings)
	}
	if streams := page.requestsSince(mark, func(r string) bool { return strings.Contains(r, "/events") }); len(streams) != 1 || !strings.HasSuffix(streams[0], "/v1/conversations/"+conv+"/events") {
		t.Fatalf("the conversation view's event streams: %v, want the conversation's one", streams)
	}
}

// sendMessage writes a message and its config in the conversation view's box, sends it (with
// Enter in the box, or the Send button) and returns the id of the execution it started.
func (p *browserPage) sendMessage(message, config string, enter bool) string {
	p.t.Helper()
	before := p.text("#message-result")
	p.evaluateVoid(`document.querySelector('.composer-config').open = true`)
	p.do(chromedp.SetValue(chromedp.ID("message-config"), config), chromedp.SetValue(chromedp.ID("message"), message))
	if enter {
		p.do(chromedp.Focus(chromedp.ID("message")), chromedp.KeyEvent(kb.Enter))
	} else {
		p.do(chromedp.Click(chromedp.ID("send")))
	}
	p.waitJS(fmt.Sprintf(`(t => t.startsWith('Sent as exec_') && t !== %q)(document.querySelector('#message-result')?.textContent ?? '')`, before))
	id := strings.TrimSuffix(strings.Fields(p.text("#message-result"))[2], ":")
	id = strings.TrimSuffix(id, ".")
	if !strings.HasPrefix(id, "exec_") {
		p.t.Fatalf("the message box said %q", p.text("#message-result"))
	}
	return id
}

// eventTime is the time of the execution's first event of type typ.
func eventTime(t *testing.T, c *client, execID string, typ api.StandardEventType) string {
	t.Helper()
	var list api.EventList
	if err := json.Unmarshal(c.getRaw("/v1/executions/"+execID+"/events"), &list); err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Events {
		if ev.Type == typ {
			return ev.Time
		}
	}
	t.Fatalf("execution %s has no %s event", execID, typ)
	return ""
}

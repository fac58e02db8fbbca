package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// TestConsoleApprovalsInboxInBrowser drives the console's inbox (console/static/inbox.js and
// rules.js) in a real headless Chromium against the real binary (examples/Caddyfile, the mock
// provider): the pending actions of several executions are listed oldest first as the server
// lists them; a person approves one, rejects one with a message the run fails with, edits one's
// arguments (a wrong shape is refused with its pointer and the row stays) so the run echoes the
// changed input, and answers an input; an action answered by another client leaves the list.
// Under the inbox, a standing rule made from the form answers the next approval with no person
// (its action.responded names the rule), and once revoked from the page it answers nothing. The
// inbox follows the tenant's stream of action events rather than polling.
// Any script error or CSP violation fails the test.
func TestConsoleApprovalsInboxInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	srv := startCaddy(t, bin, instanceEnv(t))
	c := &client{t: t, base: srv.url}
	page := openBrowser(t)

	start := func(input string, config map[string]any) string {
		conv := c.post("/v1/conversations", map[string]any{}, http.StatusCreated)
		return c.post("/v1/executions", map[string]any{"conversationId": conv["id"], "providerId": "mock",
			"input": input, "config": config}, http.StatusAccepted)["id"].(string)
	}
	approved := start("approve me", map[string]any{"requireApproval": true})
	approvedAction := pendingActionID(t, c, approved)
	rejected := start("reject me", map[string]any{"requireApproval": true})
	rejectedAction := pendingActionID(t, c, rejected)
	edited := start("edit me", map[string]any{"requireApproval": true, "editableApproval": true})
	editedAction := pendingActionID(t, c, edited)
	answered := start("input me", map[string]any{"requestInput": true})
	answeredAction := pendingActionIDIn(t, c, answered, api.ExecutionStateAwaitingInput)
	elsewhere := start("answered elsewhere", map[string]any{"requireApproval": true})
	elsewhereAction := pendingActionID(t, c, elsewhere)

	page.navigate(srv.url + "/console/#/inbox")
	page.waitJS(`document.querySelectorAll('#inbox-body tr[data-id]').length === 5`)
	// Live from the tenant's stream of action events, not by polling.
	page.waitJS(`document.getElementById('inbox-status')?.textContent.endsWith('· live')`)
	if cur := evaluate[string](page, `document.getElementById('nav-inbox').getAttribute('aria-current') ?? ''`); cur != "page" {
		t.Fatalf("the inbox link is not marked current (%q)", cur)
	}
	shown := evaluate[[]string](page, `[...document.querySelectorAll('#inbox-body tr[data-id]')].map(tr => tr.dataset.id)`)
	want := []string{approvedAction, rejectedAction, editedAction, answeredAction, elsewhereAction}
	if !slices.Equal(shown, want) {
		t.Fatalf("the inbox shows %v, want oldest first %v", shown, want)
	}
	var listed api.ActionList
	if err := json.Unmarshal(c.getRaw("/v1/actions"), &listed); err != nil {
		t.Fatal(err)
	}
	var server []string
	for _, item := range listed.Actions {
		server = append(server, item.Action.ID)
	}
	if !slices.Equal(shown, server) {
		t.Fatalf("the inbox shows %v, the server lists %v", shown, server)
	}
	row := func(action string) string { return fmt.Sprintf(`#inbox-body tr[data-id=%q]`, action) }
	// Only the editable approval offers an edit.
	if page.exists(row(approvedAction)+` details.edit`) || !page.exists(row(editedAction)+` details.edit`) {
		t.Fatal("the edit control is shown where the action takes no edit, or missing where it does")
	}
	page.screenshotFull("inbox.png")

	t.Run("approve", func(t *testing.T) {
		page.t = t
		page.do(chromedp.Click(row(approvedAction) + ` button[data-decision="approve"]`))
		page.waitJS(fmt.Sprintf(`document.querySelector('#inbox-result')?.textContent.startsWith('You approved') && !document.querySelector(%q)`, row(approvedAction)))
		if got := c.waitFor(approved, api.ExecutionStateSucceeded)["finalOutput"]; got != "Echo: approve me" {
			t.Fatalf("final output %v", got)
		}
	})

	t.Run("reject with a message", func(t *testing.T) {
		page.t = t
		page.do(chromedp.SetValue(row(rejectedAction)+` input.message`, "not today"),
			chromedp.Click(row(rejectedAction)+` button[data-decision="reject"]`))
		page.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, row(rejectedAction)))
		final := c.waitFor(rejected, api.ExecutionStateFailed)
		if msg := final["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "not today") {
			t.Fatalf("the rejected run failed with %q, without the message", msg)
		}
	})

	t.Run("edit", func(t *testing.T) {
		page.t = t
		sel := row(editedAction)
		page.do(chromedp.Click(sel+` details.edit summary`),
			chromedp.SetValue(sel+` textarea`, `{"input": 5}`),
			chromedp.Click(sel+` button[data-decision="edit"]`))
		page.waitJS(fmt.Sprintf(`document.querySelector(%q)?.textContent.includes('/arguments/input')`, sel+` .row-result`))
		if got := c.get("/v1/executions/" + edited)["state"]; got != string(api.ExecutionStateAwaitingApproval) {
			t.Fatalf("after a refused edit the execution is %v, want still awaiting approval", got)
		}
		page.do(chromedp.SetValue(sel+` textarea`, `{"input": "edited in the inbox"}`),
			chromedp.Click(sel+` button[data-decision="edit"]`))
		page.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, sel))
		if got := c.waitFor(edited, api.ExecutionStateSucceeded)["finalOutput"]; got != "Echo: edited in the inbox" {
			t.Fatalf("the edited run's output %v, want the changed input echoed", got)
		}
	})

	t.Run("respond to an input", func(t *testing.T) {
		page.t = t
		sel := row(answeredAction)
		page.do(chromedp.SetValue(sel+` input[name="value"]`, "forty-two"),
			chromedp.Click(sel+` button[data-decision="respond"]`))
		page.waitJS(fmt.Sprintf(`!document.querySelector(%q)`, sel))
		if got := c.waitFor(answered, api.ExecutionStateSucceeded)["finalOutput"]; got != "Echo: input me forty-two" {
			t.Fatalf("the answered run's output %v", got)
		}
	})

	t.Run("answered elsewhere", func(t *testing.T) {
		page.t = t
		c.post("/v1/executions/"+elsewhere+"/actions/"+elsewhereAction+":respond", map[string]any{"approved": true}, http.StatusOK)
		page.waitJS(`document.querySelector('#inbox-body')?.textContent.includes('Nothing is waiting for an answer.')`)
	})

	t.Run("standing rule", func(t *testing.T) {
		page.t = t
		page.waitJS(`document.querySelector('#rules-body')?.textContent.includes('No standing rules.')`)
		// Too little to name: the server's pointer is shown, nothing is made.
		page.do(chromedp.Click(`#rule-create`))
		page.waitJS(`document.querySelector('#rules-result')?.textContent.startsWith('Not created: VALIDATION_ERROR')`)
		page.do(chromedp.SetValue(`#rule-title`, "Approve mock *"), chromedp.Click(`#rule-create`))
		page.waitJS(`document.querySelectorAll('#rules-body tr[data-active="true"]').length === 1`)
		rule := evaluate[string](page, `document.querySelector('#rules-body tr[data-active="true"]').dataset.id`)

		byRule := start("no person needed", map[string]any{"requireApproval": true})
		c.waitFor(byRule, api.ExecutionStateSucceeded)
		var events api.EventList
		if err := json.Unmarshal(c.getRaw("/v1/executions/"+byRule+"/events"), &events); err != nil {
			t.Fatal(err)
		}
		var actor *api.Actor
		for _, ev := range events.Events {
			if ev.Type == api.StandardEventTypeActionResponded {
				actor = typed(ev.Data.AsActionRespondedData()).Actor
			}
		}
		if actor == nil || actor.ID != rule || deref(actor.Kind) != api.ActorKindRule {
			t.Fatalf("the approval was answered by %+v, want the rule %s", actor, rule)
		}

		page.do(chromedp.Click(fmt.Sprintf(`#rules-body tr[data-id=%q] button[data-revoke]`, rule)))
		page.waitJS(fmt.Sprintf(`document.querySelector('#rules-body tr[data-id=%q]')?.dataset.active === 'false'`, rule))
		if got := c.get("/v1/action-rules/" + rule)["revokedAt"]; got == nil {
			t.Fatal("the server does not have the rule revoked")
		}
		waits := start("a person again", map[string]any{"requireApproval": true})
		page.waitJS(fmt.Sprintf(`document.querySelector(%q) !== null`, row(pendingActionID(t, c, waits))))
		page.screenshotFull("inbox-rules.png")

		// At phone width the rows become cards and nothing overflows sideways.
		page.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		page.waitJS(`window.innerWidth === 390`)
		if overflow := evaluate[int](page, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Fatalf("at phone width the inbox is %d px wider than the screen", overflow)
		}
		page.desktop()
	})

	page.t = t
	page.requireNoPageErrors()
	srv.stop(t)
}

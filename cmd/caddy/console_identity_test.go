package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

const identityCaddyfile = "testdata/identity.Caddyfile"

// TestConsoleShowsWhoDidIt: behind basic_auth with `identity {http.auth.user.id}`, a person
// (the browser sends her credentials on every request, the event stream's included) approves
// one execution and cancels another from the console; the events list and the timeline name
// her as who answered and who cancelled, as the stored events do.
func TestConsoleShowsWhoDidIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the caddy binary and a browser; run without -short")
	}
	bin := buildCaddy(t)
	const password = "carol's password"
	hash, err := exec.Command(bin, "hash-password", "--plaintext", password, "--bcrypt-cost", "4").Output()
	if err != nil {
		t.Fatalf("caddy hash-password: %v", err)
	}
	srv := startCaddyWith(t, bin, append(instanceEnv(t), "HARNESS_CAROL_HASH="+strings.TrimSpace(string(hash))), identityCaddyfile)
	defer srv.stop(t)
	page := openBrowser(t)
	page.do(chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		if _, err := cdp.Call(ctx, target, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, target, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Authorization": "Basic " + basicCredentials("carol", password)},
		})
		return err
	}))

	approved := page.startFromPage(srv.url, "approve me", `{"requireApproval":true}`)
	page.waitJS(`document.querySelector('#action-approve') !== null`)
	page.do(chromedp.Click(chromedp.ID("action-approve")))
	page.waitJS(`document.querySelector('#exec-state')?.textContent === 'succeeded' && document.querySelector('#timeline li[data-phase="end"]') !== null`)
	if got := page.text(`#events li[data-type="action.responded"] .actor`); got != "by carol" {
		t.Errorf("the action.responded event of %s is listed with %q, want by carol", approved, got)
	}
	if got := page.text(`#timeline li[data-phase="responded"] .label`); got != "Approved by carol" {
		t.Errorf("the timeline's answer row of %s reads %q", approved, got)
	}

	cancelled := page.startFromPage(srv.url, strings.Repeat("word ", 40), `{"delayMs":500}`)
	page.waitJS(`document.querySelector('#exec-state')?.textContent === 'running'`)
	// Through the DOM, not a mouse click at the button's coordinates: the output above the button
	// grows every 500 ms (a line wraps), so the button may have moved between the moment the
	// coordinates are read and the click (it was seen once in CI: no cancel, the run completed).
	page.evaluateVoid(`document.getElementById('cancel').click()`)
	page.waitJS(`document.querySelector('#cancel-result')?.textContent !== ''`)
	page.waitJS(`document.querySelector('#timeline li[data-phase="end"] .label')?.textContent === 'Cancelled by carol'`)
	if got := page.text(`#events li[data-type="run.cancelled"] .actor`); got != "by carol" {
		t.Errorf("the run.cancelled event of %s is listed with %q, want by carol", cancelled, got)
	}
	// Events that nobody caused name nobody.
	if n := evaluate[int](page, `document.querySelectorAll('#events li .actor').length`); n != 1 {
		t.Errorf("%d events of %s name someone, want only run.cancelled", n, cancelled)
	}
	page.requireNoPageErrors()
}

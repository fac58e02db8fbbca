package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// harnessctl chat's line editing at a terminal, run by TestEndToEnd: a line typed while a reply
// streams is edited on a line of its own, below the reply, never inside the reply's text; and
// free text at an approval prompt asks again instead of denying.

// testChatTypingDuringReply types a line while a reply streams, word by word (the mock sleeps
// before each word): the first half once the reply has begun, the rest once the server has
// streamed another word of it. The screen, as a terminal shows it, must have the reply's words
// on one line of their own and the typed line on another.
func (e *e2e) testChatTypingDuringReply(t *testing.T) {
	term := startInTerminal(t, e.ctlBin, e.base, "chat", "--config", `{"delayMs":800}`)
	term.waitFor(t, "leaves\r\n> ")
	term.write(t, "alpha beta gamma delta\n")
	term.waitFor(t, "Echo: alpha ")
	term.write(t, "side ")
	conv := chatConversation(t, e.base, term.output())
	e.waitForText(t, history(t, e.base, conv.ID)[0].ID, "beta ")
	term.write(t, "question\n")
	term.waitFor(t, "Echo: side question")
	term.write(t, "\x04")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
	}
	screen := renderScreen(term.output())
	var replyLine bool
	for _, line := range screen {
		if strings.Contains(line, "Echo: alpha") && strings.Contains(line, "side") {
			t.Errorf("the typed line landed inside the reply: %q\nscreen:\n%s", line, strings.Join(screen, "\n"))
		}
		replyLine = replyLine || line == "Echo: alpha beta gamma delta"
	}
	t.Logf("screen:\n%s", strings.Join(screen, "\n"))
	if !replyLine {
		t.Errorf("no line of the screen is the reply, whole:\n%s", strings.Join(screen, "\n"))
	}
	turns := history(t, e.base, conv.ID)
	if len(turns) != 2 || turns[1].Input != "side question" {
		t.Errorf("turns %+v, want the typed line sent whole as the second turn", turns)
	}
}

// testChatApprovalReasks: free text at a [y/N] prompt is neither answer: the question is asked
// again, and y then approves.
func (e *e2e) testChatApprovalReasks(t *testing.T) {
	term := startInTerminal(t, e.ctlBin, e.base, "chat", "--config", `{"requireApproval":true}`)
	term.waitFor(t, "leaves\r\n> ")
	term.write(t, "deploy the site\n")
	term.waitFor(t, "[y/N] ")
	term.write(t, "wait, what will this do?\n")
	term.waitForCount(t, "[y/N] ", 2)
	term.write(t, "y\n")
	term.waitFor(t, "Echo: deploy the site")
	term.write(t, "\x04")
	if code := term.wait(t); code != exitOK {
		t.Fatalf("exit code %d, want %d; terminal:\n%s", code, exitOK, term.output())
	}
	if !strings.Contains(term.output(), `"wait, what will this do?" is neither`) {
		t.Errorf("the re-asked question does not say why:\n%s", term.output())
	}
	conv := chatConversation(t, e.base, term.output())
	turns := history(t, e.base, conv.ID)
	if len(turns) != 1 || turns[0].State != api.ExecutionStateSucceeded {
		t.Fatalf("turns %+v, want one, succeeded", turns)
	}
	responded := findEvent(replay(t, e.client, turns[0].ID), api.StandardEventTypeActionResponded)
	if responded == nil || !deref(typed(responded.Data.AsActionRespondedData()).Approved) {
		t.Errorf("action.responded %v, want approved", responded)
	}
}

// waitForText waits until the execution has streamed text ending a delta with suffix.
func (e *e2e) waitForText(t *testing.T, id, suffix string) {
	t.Helper()
	guard := time.After(time.Minute) // a hang guard only
	for {
		var text string
		for _, ev := range replay(t, e.client, id) {
			if ev.Type == api.StandardEventTypeOutputTextDelta {
				text += typed(ev.Data.AsTextDeltaData()).Text
			}
		}
		if strings.HasSuffix(text, suffix) || strings.Contains(text, suffix) {
			return
		}
		select {
		case <-guard:
			t.Fatalf("%s never streamed %q (so far %q)", id, suffix, text)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitForCount waits until the terminal has shown s n times.
func (term *terminal) waitForCount(t *testing.T, s string, n int) {
	t.Helper()
	guard := time.After(time.Minute) // a hang guard only
	for {
		term.mu.Lock()
		shown, changed := strings.Count(term.out.String(), s) >= n, term.changed
		term.mu.Unlock()
		if shown {
			return
		}
		select {
		case <-changed:
		case <-term.readEnd:
			t.Fatalf("harnessctl ended before showing %q %d times:\n%s", s, n, term.output())
		case <-guard:
			t.Fatalf("the terminal never showed %q %d times:\n%s", s, n, term.output())
		}
	}
}

// renderScreen replays what a terminal does with the output — carriage return, line feed,
// erasing to the end of the line and cursor moves (ESC [ n A/B/C/D, ESC [ K) — and returns the
// lines it shows, without trailing blanks.
func renderScreen(out string) []string {
	lines := [][]rune{nil}
	row, col := 0, 0
	put := func(r rune) {
		for len(lines[row]) < col {
			lines[row] = append(lines[row], ' ')
		}
		if col < len(lines[row]) {
			lines[row][col] = r
		} else {
			lines[row] = append(lines[row], r)
		}
		col++
	}
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\r':
			col = 0
		case r == '\n':
			row++
			if row == len(lines) {
				lines = append(lines, nil)
			}
		case r == '\b':
			col = max(col-1, 0)
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == ';') {
				j++
			}
			if j == len(rs) {
				break
			}
			n, err := strconv.Atoi(string(rs[i+2 : j]))
			if err != nil {
				n = 1
			}
			switch rs[j] {
			case 'A':
				row = max(row-n, 0)
			case 'B':
				row += n
				for row >= len(lines) {
					lines = append(lines, nil)
				}
			case 'C':
				col += n
			case 'D':
				col = max(col-n, 0)
			case 'K':
				if col < len(lines[row]) {
					lines[row] = lines[row][:col]
				}
			}
			i = j
		case r >= ' ':
			put(r)
		}
	}
	screen := make([]string, len(lines))
	for i, l := range lines {
		screen[i] = strings.TrimRight(string(l), " ")
	}
	return screen
}

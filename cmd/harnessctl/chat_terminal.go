package main

import (
	"bytes"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// chatTerminal is harnessctl chat's screen at a terminal: a line editor (golang.org/x/term's
// Terminal, maintained with Go itself: line editing, history, and output written while a line is
// edited goes above it) at the bottom, and the replies and notices above it. The terminal is in
// raw mode for the chat, so nothing the user types is echoed by the terminal driver into the
// middle of a reply: the editor draws the typed line itself, on a line of its own.
//
// A reply streams word by word, so its last line is often unfinished. While nothing is being
// edited that line is on the screen as it grows. When a prompt is drawn (the chat's "> ", or a
// question), the unfinished line is taken off the screen and held back: only finished lines are
// written above the prompt, and the held line comes back once the prompt goes (the line was
// entered). Notices are whole lines: they go above the unfinished reply line, which they do not
// break. The Terminal's own prompt stays empty; chatTerminal draws its prompts itself, so that a
// prompt can appear and go while a line is being read.
type chatTerminal struct {
	t            *term.Terminal
	fd           int
	restore      func()
	stopResizing func()

	mu        sync.Mutex
	prompt    string // drawn at the bottom; "" when none
	tail      []byte // the reply's unfinished line
	tailShown bool   // tail is on the screen (no prompt is drawn)
	notice    []byte // a notice's unfinished line, written once whole
	// typingPrompt is drawn when a key is typed with no prompt on the screen (during a turn).
	typingPrompt string
}

// newChatTerminal puts the terminal of in and out into raw mode for the editor; nil when that
// cannot be done here (not a terminal, or not this platform), and chat reads lines as before.
func newChatTerminal(in io.Reader, out io.Writer) *chatTerminal {
	inFile, ok1 := in.(*os.File)
	outFile, ok2 := out.(*os.File)
	if !ok1 || !ok2 || !term.IsTerminal(int(inFile.Fd())) || !term.IsTerminal(int(outFile.Fd())) {
		return nil
	}
	restore, err := makeRawKeepingSignals(int(inFile.Fd()))
	if err != nil {
		return nil
	}
	ct := &chatTerminal{fd: int(outFile.Fd()), restore: restore, typingPrompt: "> "}
	ct.t = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{inFile, outFile}, "")
	if w, h, err := term.GetSize(ct.fd); err == nil && w > 0 {
		_ = ct.t.SetSize(w, h)
	}
	ct.t.AutoCompleteCallback = ct.keyTyped
	ct.stopResizing = ct.followResizes()
	return ct
}

// close ends the prompt's line and gives the terminal its modes back.
func (ct *chatTerminal) close() {
	ct.stopResizing()
	ct.endPrompt()
	ct.restore()
}

// readLine reads the next line typed (io.EOF: Ctrl-D on an empty line). The line stays on the
// screen as typed, with its prompt; the prompt is gone for what follows.
func (ct *chatTerminal) readLine() (string, error) {
	line, err := ct.t.ReadLine()
	if err != nil {
		return "", err // the prompt stays; leaving ends its line (endPrompt)
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.prompt != "" || len(ct.tail) > 0 {
		// After Enter the cursor is on a fresh line; anything written meanwhile redrew the
		// prompt there, which this clears.
		ct.write("\r\x1b[K" + string(ct.tail))
		ct.tailShown = len(ct.tail) > 0
	}
	ct.prompt = ""
	return line, err
}

// setPrompt draws p at the bottom in place of the prompt there ("" takes it away); the line
// being edited, if any, stays after it.
func (ct *chatTerminal) setPrompt(p string) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.setPromptLocked(p)
}

func (ct *chatTerminal) setPromptLocked(p string) {
	if p == ct.prompt {
		return
	}
	var out string
	switch {
	case ct.prompt != "":
		out = "\r\x1b[K"
	case ct.tailShown:
		out = ct.takeTailOffLocked()
	}
	ct.prompt = p
	if p == "" && len(ct.tail) > 0 {
		out += string(ct.tail)
		ct.tailShown = true
	}
	ct.write(out + p)
}

// endPrompt leaves the prompt's line as it is and moves below it (leaving the chat).
func (ct *chatTerminal) endPrompt() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.prompt != "" || ct.tailShown {
		ct.write("\n")
	}
	ct.prompt, ct.tail, ct.tailShown = "", nil, false
}

// takeTailOffLocked returns what takes the shown unfinished reply line off the screen, to be
// held back. A line wider than the terminal has wrapped: it is ended where it is instead (its
// rest will follow on a new line).
func (ct *chatTerminal) takeTailOffLocked() string {
	ct.tailShown = false
	if visualWidth(ct.tail) < ct.width() {
		return "\r\x1b[K"
	}
	ct.tail = nil
	return "\n"
}

// width is the terminal's columns; 80, the editor's own assumption, when it does not say (a
// pseudo-terminal nobody sized).
func (ct *chatTerminal) width() int {
	if w, _, err := term.GetSize(ct.fd); err == nil && w > 0 {
		return w
	}
	return 80
}

// keyTyped is the editor's hook before each key it inserts: the first key typed with no prompt
// on the screen (during a reply) brings the typing prompt, below the reply.
func (ct *chatTerminal) keyTyped(line string, _ int, _ rune) (string, int, bool) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.prompt == "" && line == "" {
		ct.setPromptLocked(ct.typingPrompt)
	}
	return "", 0, false
}

// replies is the writer of the replies' text (stdout).
func (ct *chatTerminal) replies() io.Writer { return writerFunc(ct.writeReply) }

// notices is the writer of the notices (stderr): whole lines, above the unfinished reply line.
func (ct *chatTerminal) notices() io.Writer { return writerFunc(ct.writeNotice) }

func (ct *chatTerminal) writeReply(p []byte) (int, error) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.prompt == "" {
		ct.write(string(p))
		ct.tail = appendTail(ct.tail, p)
		ct.tailShown = len(ct.tail) > 0
		return len(p), nil
	}
	data := append(ct.tail, p...)
	end := bytes.LastIndexByte(data, '\n') + 1
	ct.tail = append([]byte(nil), data[end:]...)
	if end > 0 {
		ct.write("\r\x1b[K" + string(data[:end]) + ct.prompt)
	}
	return len(p), nil
}

func (ct *chatTerminal) writeNotice(p []byte) (int, error) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	data := append(ct.notice, p...)
	end := bytes.LastIndexByte(data, '\n') + 1
	ct.notice = append([]byte(nil), data[end:]...)
	if end == 0 {
		return len(p), nil
	}
	lines := string(data[:end])
	switch {
	case ct.prompt != "":
		ct.write("\r\x1b[K" + lines + ct.prompt)
	case ct.tailShown:
		off := ct.takeTailOffLocked()
		ct.tailShown = len(ct.tail) > 0
		ct.write(off + lines + string(ct.tail))
	default:
		ct.write(lines)
	}
	return len(p), nil
}

// write goes through the editor, which redraws the line being edited after it.
func (ct *chatTerminal) write(s string) {
	if s != "" {
		_, _ = ct.t.Write([]byte(s))
	}
}

// appendTail is tail after p was printed: what follows p's last newline, or tail+p without one.
func appendTail(tail, p []byte) []byte {
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		return append([]byte(nil), p[i+1:]...)
	}
	return append(tail, p...)
}

// visualWidth is the columns b takes (a rune each, as the editor counts them).
func visualWidth(b []byte) int { return len(bytes.Runes(b)) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

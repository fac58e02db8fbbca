package main

import (
	"bufio"
	"io"
	"slices"
	"strings"
	"sync"
)

// prompter owns the terminal's input lines. It reads a line only while a prompt wants one, and
// gives each line to the prompt that is open when the line is complete: a line finished after
// its prompt was withdrawn (the action was answered elsewhere, the execution ended) is dropped,
// so a later prompt never takes an answer typed for an earlier question. Lines piped in are read
// one per prompt, so a script's answers are taken in order.
//
// chat also has a message prompt, open beneath the questions: a line goes to it only while no
// question is open, so a question asked while chat waits for the next message takes the
// answer, and the message prompt has the lines again once the question is closed.
//
// The reading goroutine may stay blocked on stdin when nothing more is asked; it is abandoned
// with the process.
type prompter struct {
	in io.Reader
	// editor, when set, reads the lines instead of in (chat at a terminal: chat_terminal.go).
	editor *chatTerminal

	start sync.Once
	wants chan struct{} // a prompt wants a line; read by the reading goroutine
	eof   chan struct{} // closed when input ended (Ctrl-D, or the end of a pipe)

	mu        sync.Mutex
	questions []chan string // the open questions, the newest last: it gets the next line
	message   chan string   // chat's open message prompt, if any
	reading   bool          // the reading goroutine is waiting for a line
}

// open registers the question that wants the next line, and returns where the line and the end
// of input are announced.
func (p *prompter) open() (lines <-chan string, eof <-chan struct{}) {
	ch := make(chan string, 1)
	p.want(func() { p.questions = append(p.questions, ch) })
	return ch, p.eof
}

// openMessage registers chat's message prompt, which gets the next line no question takes.
func (p *prompter) openMessage() (lines <-chan string, eof <-chan struct{}) {
	ch := make(chan string, 1)
	p.want(func() { p.message = ch })
	return ch, p.eof
}

// want registers a prompt (under the lock) and wakes the reading goroutine.
func (p *prompter) want(register func()) {
	p.start.Do(func() {
		p.wants = make(chan struct{}, 1)
		p.eof = make(chan struct{})
		go p.read()
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	register()
	if !p.reading {
		p.reading = true
		p.wants <- struct{}{}
	}
}

// close unregisters the prompt of lines: a line completed from now on is not its answer.
func (p *prompter) close(lines <-chan string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.questions = slices.DeleteFunc(p.questions, func(ch chan string) bool { return (<-chan string)(ch) == lines })
	if (<-chan string)(p.message) == lines {
		p.message = nil
	}
}

func (p *prompter) read() {
	next := p.scanLines()
	for range p.wants {
		for {
			line, ok := next()
			if !ok {
				close(p.eof)
				return
			}
			line = strings.TrimSpace(line)
			p.mu.Lock()
			switch n := len(p.questions); {
			case n > 0:
				p.questions[n-1] <- line // buffered for one line: never blocks
				p.questions = p.questions[:n-1]
			case p.message != nil:
				p.message <- line
				p.message = nil
			}
			// A prompt still open (chat's message prompt, under the question answered) wants
			// the next line.
			more := len(p.questions) > 0 || p.message != nil
			p.reading = more
			p.mu.Unlock()
			if !more {
				break
			}
		}
	}
}

// scanLines is how lines are read: through the editor, or from in as they come.
func (p *prompter) scanLines() func() (string, bool) {
	if p.editor != nil {
		return func() (string, bool) {
			line, err := p.editor.readLine()
			return line, err == nil
		}
	}
	sc := bufio.NewScanner(p.in)
	return func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
}

// openPrompt is one question on the screen. Exactly one of its answer (a line, end of input)
// and its withdrawal wins.
type openPrompt struct {
	actionID  string
	withdrawn chan struct{} // closed when withdrawn

	mu    sync.Mutex
	state promptState
}

type promptState int

const (
	promptOpen promptState = iota
	promptTaken
	promptWithdrawn
)

func newOpenPrompt(actionID string) *openPrompt {
	return &openPrompt{actionID: actionID, withdrawn: make(chan struct{})}
}

// take claims the prompt for an answer; false when it was withdrawn first.
func (op *openPrompt) take() bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.state != promptOpen {
		return false
	}
	op.state = promptTaken
	return true
}

// withdraw closes the prompt without an answer; false when it was answered (or withdrawn)
// first.
func (op *openPrompt) withdraw() bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.state != promptOpen {
		return false
	}
	op.state = promptWithdrawn
	close(op.withdrawn)
	return true
}

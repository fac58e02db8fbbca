package main

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// prompter owns the terminal's input lines. It reads a line only while a prompt wants one, and
// gives each line to the prompt that is open when the line is complete: a line finished after
// its prompt was withdrawn (the action was answered elsewhere, the execution ended) is dropped,
// so a later prompt never takes an answer typed for an earlier question. Lines piped in are read
// one per prompt, so a script's answers are taken in order.
//
// The reading goroutine may stay blocked on stdin when nothing more is asked; it is abandoned
// with the process.
type prompter struct {
	in io.Reader

	start sync.Once
	wants chan struct{} // a prompt wants a line; read by the reading goroutine
	eof   chan struct{} // closed when input ended (Ctrl-D, or the end of a pipe)

	mu      sync.Mutex
	target  chan string // the open prompt's line, nil when no prompt is open
	reading bool        // the reading goroutine is waiting for a line
}

// open registers the prompt that wants the next line, and returns where the line and the end
// of input are announced.
func (p *prompter) open() (lines <-chan string, eof <-chan struct{}) {
	p.start.Do(func() {
		p.wants = make(chan struct{}, 1)
		p.eof = make(chan struct{})
		go p.read()
	})
	ch := make(chan string, 1)
	p.mu.Lock()
	p.target = ch
	if !p.reading {
		p.reading = true
		p.wants <- struct{}{}
	}
	p.mu.Unlock()
	return ch, p.eof
}

// close unregisters the prompt of lines: a line completed from now on is not its answer.
func (p *prompter) close(lines <-chan string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.target != nil && (<-chan string)(p.target) == lines {
		p.target = nil
	}
}

func (p *prompter) read() {
	sc := bufio.NewScanner(p.in)
	for range p.wants {
		if !sc.Scan() {
			close(p.eof)
			return
		}
		line := strings.TrimSpace(sc.Text())
		p.mu.Lock()
		p.reading = false
		if p.target != nil {
			p.target <- line // buffered for one line: never blocks
			p.target = nil
		}
		p.mu.Unlock()
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

//go:build !linux

package main

import "errors"

// makeRawKeepingSignals is Linux's only for now: elsewhere chat reads lines as the terminal
// driver gives them (cooked mode, as before the editor).
func makeRawKeepingSignals(int) (func(), error) {
	return nil, errors.New("the chat's line editor is not available on this platform")
}

// followResizes is never reached here (there is no editor without raw mode).
func (*chatTerminal) followResizes() (stop func()) { return func() {} }

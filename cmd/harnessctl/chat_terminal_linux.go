package main

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// makeRawKeepingSignals is term.MakeRaw but for ISIG: Ctrl-C stays SIGINT, which chat handles
// (it cancels the running turn, or leaves at the prompt), where the editor would read it as the
// end of input.
func makeRawKeepingSignals(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// followResizes keeps the editor's idea of the terminal's width (where a long line wraps) the
// terminal's own as the window is resized, until stop.
func (ct *chatTerminal) followResizes() (stop func()) {
	resized := make(chan os.Signal, 1)
	signal.Notify(resized, unix.SIGWINCH)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range resized {
			if w, h, err := term.GetSize(ct.fd); err == nil && w > 0 {
				_ = ct.t.SetSize(w, h)
			}
		}
	}()
	return func() {
		signal.Stop(resized)
		close(resized)
		<-done
	}
}

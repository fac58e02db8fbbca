// Command harnessctl is the command-line client of the Harness Runtime API: start an execution
// and watch it, answer its approval and input requests at the terminal or from flags, attach to
// a running execution, read and follow events, list artifacts, cancel, and check a server with
// the portable conformance suite.
//
// It is built on the Go SDK (package sdk) and spf13/cobra; run `harnessctl help` for the
// commands.
package main

import (
	"io"
	"os"
	"os/signal"
)

// Exit codes. A run's code says how the execution ended.
const (
	exitOK        = 0 // done; for run and watch: the execution succeeded
	exitError     = 1 // the command could not do its work (server unreachable, request refused, …)
	exitUsage     = 2 // bad command line
	exitFailed    = 3 // run, watch: the execution failed; conformance: a check failed
	exitCancelled = 4 // run, watch: the execution was cancelled (Ctrl-C included)
)

// app is the process's surroundings, so tests can run commands in-process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// interrupts delivers Ctrl-C (SIGINT) while a command wants it; stop restores the default
	// (Ctrl-C kills the process) for commands that do not ask.
	interrupts func() (ch <-chan os.Signal, stop func())

	// Set by client: the base URL in use and the transport that watches its answers (fail
	// reads them to explain an error).
	currentBase string
	wire        *wireWatch
}

func main() {
	a := &app{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		getenv: os.Getenv,
		interrupts: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt)
			return ch, func() { signal.Stop(ch) }
		},
	}
	os.Exit(a.main(os.Args[1:]))
}

// Command harnessctl is the command-line client of the Harness Runtime API: start an execution
// and watch it, answer its approval and input requests at the terminal, read and follow events,
// cancel, and check a server with the portable conformance suite.
//
// It is built on the Go SDK (package sdk); run `harnessctl help` for the commands.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit codes. A run's code says how the execution ended.
const (
	exitOK        = 0 // done; for run: the execution succeeded
	exitError     = 1 // the command could not do its work (server unreachable, request refused, …)
	exitUsage     = 2 // bad command line
	exitFailed    = 3 // run: the execution failed; conformance: a check failed
	exitCancelled = 4 // run: the execution was cancelled (Ctrl-C included)
)

// app is the process's surroundings, so tests can run commands in-process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// interrupts delivers Ctrl-C (SIGINT) while a command wants it; stop restores the default
	// (Ctrl-C kills the process) for commands that do not ask.
	interrupts func() (ch <-chan os.Signal, stop func())
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

// command is one subcommand.
type command struct {
	name, args, summary string
	// help is the long description and the examples, shown by `harnessctl help <name>`.
	help string
	run  func(a *app, g *globals, c command, args []string) int
}

var commands []command

func init() {
	commands = []command{
		runCommand, eventsCommand, getCommand, cancelCommand, respondCommand,
		conversationCommand, runtimeCommand, capabilitiesCommand, conformanceCommand,
	}
}

const overview = `harnessctl — the command-line client of the Harness Runtime API.

Usage:
  harnessctl [--base URL] [--json] <command> [flags] [arguments]

Commands:
%s
The server is --base, else $HARNESS_URL, else http://127.0.0.1:4310. A bearer token in
$HARNESS_TOKEN is sent with every request. --json prints objects as JSON for scripts.

Exit codes: 0 success (run: the execution succeeded), 1 error, 2 bad command line,
3 run: the execution failed / conformance: a check failed, 4 run: the execution was cancelled.

Examples:
  harnessctl run "hello runtime"
  harnessctl run --config '{"requireApproval":true}' "deploy it"
  harnessctl events --follow exec_3f9a…
  harnessctl conformance --base http://127.0.0.1:4310 --provider mock

Run 'harnessctl help <command>' for a command's flags and examples.
`

func (a *app) usage(w io.Writer) {
	list := ""
	for _, c := range commands {
		list += fmt.Sprintf("  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, overview, list)
}

func (a *app) main(args []string) int {
	g := &globals{}
	fs := g.flagSet(a, "harnessctl")
	fs.Usage = func() { a.usage(a.stderr) }
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	args = fs.Args()
	if len(args) == 0 {
		a.usage(a.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		if len(rest) == 0 {
			a.usage(a.stdout)
			return exitOK
		}
		name, rest = rest[0], []string{"-h"}
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(a, g, c, rest)
		}
	}
	fmt.Fprintf(a.stderr, "harnessctl: unknown command %q\n\n", name)
	a.usage(a.stderr)
	return exitUsage
}

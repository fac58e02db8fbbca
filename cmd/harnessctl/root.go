package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// The command line is parsed by spf13/cobra (what kubectl, gh and Caddy use): flags may come
// before or after the arguments, help goes to stdout, and --version and shell completion come
// with it. Every command's RunE returns an exitCode; any other error is cobra's own (unknown
// command, unknown flag, bad flag value) and is a usage error.

// exitCode is how a command ends; it travels through cobra as the command's error.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit code %d", int(c)) }

// globals are the flags every command takes, before or after its name.
type globals struct {
	base   string
	json   bool
	cacert string
	user   string
}

const rootLong = `harnessctl — the command-line client of the Harness Runtime API.

The server is --base, else $HARNESS_URL, else ` + defaultBase + `. A bearer token in
$HARNESS_TOKEN is sent with every request; for basic authentication (Caddy's basic_auth, as in
examples/public.Caddyfile) give --user NAME:PASSWORD or, kept out of shell history,
HARNESS_USER=NAME:PASSWORD. Credentials in the URL (https://alice:…@host) are refused: URLs end
up in logs and messages. --json prints objects as JSON for scripts.

HTTPS with a private CA (Caddy's "tls internal"): pass its root certificate with --cacert.
Caddy keeps it in $XDG_DATA_HOME/caddy/pki/authorities/local/root.crt (by default
~/.local/share/caddy/…), and its admin API serves it:
  curl -s localhost:2019/pki/ca/local | jq -r .root_certificate > caddy-root.crt

Exit codes: 0 success (run, watch: the execution succeeded), 1 error, 2 bad command line,
3 run, watch: the execution failed / conformance: a check failed, 4 run, watch: the execution
was cancelled.`

const rootExamples = `  harnessctl run "hello runtime"
  harnessctl run "deploy it" --config '{"requireApproval":true}'
  harnessctl run --approve --config '{"requireApproval":true}' "deploy it"
  harnessctl chat --policy reject
  harnessctl watch exec_3f9a…
  harnessctl events --follow exec_3f9a…
  harnessctl --base https://localhost:8443 --cacert caddy-root.crt runtime
  harnessctl inbox
  harnessctl inbox answer action_77c1… --reject --message "not on production"
  harnessctl conformance --provider mock
  source <(harnessctl completion bash)`

// newRoot builds the command tree for one invocation, its flags bound to g.
func (a *app) newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "harnessctl",
		Short:         "the command-line client of the Harness Runtime API",
		Long:          rootLong,
		Example:       rootExamples,
		Version:       version(),
		SilenceErrors: true, // main prints errors, with the usage for usage errors
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(a.usageError(cmd, "a command is missing"))
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.base, "base", "", "server base `URL` (default $HARNESS_URL, else "+defaultBase+")")
	pf.BoolVar(&g.json, "json", false, "print objects as JSON")
	pf.StringVar(&g.user, "user", "", "basic authentication as `NAME:PASSWORD` (default $HARNESS_USER)")
	pf.StringVar(&g.cacert, "cacert", "", "trust the CA certificates of this PEM `file` too (for a private CA such as Caddy's internal one)")
	_ = root.MarkPersistentFlagFilename("cacert", "crt", "pem")

	for _, build := range []func(*app, *globals) *cobra.Command{
		newRunCommand, newChatCommand, newWatchCommand, newEventsCommand, newGetCommand, newArtifactsCommand, newLsCommand, newUsageCommand,
		newCancelCommand, newRespondCommand, newConversationCommand, newRuntimeCommand,
		newCapabilitiesCommand, newConformanceCommand, newInboxCommand, newRulesCommand,
	} {
		root.AddCommand(build(a, g))
	}
	return root
}

func (a *app) main(args []string) int {
	root := a.newRoot(&globals{})
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteC()
	var code exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	}
	// cobra's own error: the command line is wrong.
	return a.usageError(cmd, "%v", err)
}

// usageError reports a bad command line with the command's usage, on stderr.
func (a *app) usageError(cmd *cobra.Command, format string, args ...any) int {
	fmt.Fprintf(a.stderr, "harnessctl: "+format+"\n\n", args...)
	fmt.Fprint(a.stderr, cmd.UsageString())
	if !cmd.HasAvailableSubCommands() { // cobra's usage says it for commands with subcommands
		fmt.Fprintf(a.stderr, "\nRun '%s --help' for more.\n", cmd.CommandPath())
	}
	return exitUsage
}

// badValue reports a flag value that cannot be used, on stderr: the message says what is wrong
// and how to write it, so the usage is not repeated (only where to find it). Exit code 2.
func (a *app) badValue(cmd *cobra.Command, format string, args ...any) int {
	fmt.Fprintf(a.stderr, "harnessctl: "+format+"\n", args...)
	fmt.Fprintf(a.stderr, "Run '%s --help' for the flags.\n", cmd.CommandPath())
	return exitUsage
}

// runs adapts a command's body to cobra: its exit code becomes the error main reads.
func runs(body func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if code := body(cmd, args); code != exitOK {
			return exitCode(code)
		}
		return nil
	}
}

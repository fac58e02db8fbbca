package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Defaults of the reference adapter (docs/protocol.md §11.4).
const (
	DefaultID                    = "acp"
	DefaultInitializationTimeout = 10 * time.Second
	DefaultRunTimeout            = 300 * time.Second
	DefaultShutdownGrace         = 500 * time.Millisecond
	DefaultMaxMessageBytes       = 1 << 20
	DefaultMaxPendingPermissions = 16
	// DefaultIdleTimeout is how long a conversation's agent process stays warm after its turn:
	// long enough for a person's next message, short enough that idle agents do not pile up.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultMaxProcesses bounds the agent processes of one provider instance on one node
	// (warm and busy): a coding agent takes hundreds of MB.
	DefaultMaxProcesses = 16

	// maxMessageBytesCeiling is the longest line the SDK's reader accepts (bufio.Scanner with a
	// 10 MiB buffer in acp-go-sdk's connection.go); a larger limit could never be honoured.
	maxMessageBytesCeiling = 10 * 1024 * 1024
	// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: the reference requires "positive safe
	// integers", and configuration written for it must mean the same here.
	maxSafeInteger = 1<<53 - 1
)

// Exact messages of constructor errors (the first two are the reference's).
var (
	errCommandRequired   = errors.New("ACP command is required")
	errLimitsNotPositive = errors.New("ACP limits must be positive safe integers")
	errMessageLimitHigh  = fmt.Errorf("ACP max_message_bytes must not exceed %d", maxMessageBytesCeiling)
	errInvalidEnvName    = errors.New("ACP env names must be non-empty and contain neither '=' nor NUL")
	errInvalidEnvValue   = errors.New("ACP env values must not contain NUL")
	errInvalidID         = errors.New("ACP provider id must not be blank")
)

// Config is the trusted, deployment-owned launch configuration of one ACP provider instance. It
// maps one to one onto the Caddy guest module harness.providers.acp (JSON field names are the
// Caddy ones). Zero values mean "default"; negative limits are rejected.
type Config struct {
	// ID is the provider id in the runtime's registry (default "acp"); several instances with
	// different ids can run side by side (e.g. "claude" and "gemini").
	ID string `json:"id,omitempty"`
	// Command is the agent executable: a path, or a name looked up in the server's PATH. Required.
	Command string `json:"command,omitempty"`
	// Args are passed to the command as they are, without a shell.
	Args []string `json:"args,omitempty"`
	// Cwd is the agent's working directory and the cwd of its ACP session; a relative path is made
	// absolute against the server's working directory at construction (default: that directory).
	// With ConversationRoot set, it is only where the initialize probe runs.
	Cwd string `json:"cwd,omitempty"`
	// ConversationRoot, when set, gives each conversation a working directory of its own,
	// <root>/<conversation id>, created 0700 on the conversation's first execution, checked on
	// every turn, and removed when retention forgets the conversation (workspace.go, forget.go).
	// The root must be the server's user's alone: Start creates it 0700 or tightens it to 0700,
	// and refuses one owned by another user. Unset: every conversation works in Cwd. Made
	// absolute at construction, like Cwd.
	ConversationRoot string `json:"conversation_root,omitempty"`
	// Env is the agent's whole environment: nothing of the server's environment is inherited, so
	// PATH, HOME and credentials must be listed here when the agent needs them. The one addition
	// is TRACEPARENT (and TRACESTATE), the execution's trace context, when it has one and Env
	// does not set it (tracing.go).
	Env map[string]string `json:"env,omitempty"`

	// InitializationTimeout bounds the ACP initialize handshake (default 10s).
	InitializationTimeout Duration `json:"initialization_timeout,omitempty"`
	// RunTimeout bounds a whole execution, from spawn to the end of the turn (default 300s).
	RunTimeout Duration `json:"run_timeout,omitempty"`
	// ShutdownGrace is each wait of the teardown ladder: pending permission answers, the
	// session/cancel notification, then stdin close → SIGTERM → SIGKILL (default 500ms).
	ShutdownGrace Duration `json:"shutdown_grace,omitempty"`
	// MaxMessageBytes bounds one inbound JSON-RPC message (default 1 MiB, at most 10 MiB).
	MaxMessageBytes int `json:"max_message_bytes,omitempty"`
	// MaxPendingPermissions bounds unanswered session/request_permission requests (default 16).
	MaxPendingPermissions int `json:"max_pending_permissions,omitempty"`

	// IdleTimeout is how long a conversation's agent process stays warm after a turn, waiting
	// for the conversation's next execution (default 5m; pool.go).
	IdleTimeout Duration `json:"idle_timeout,omitempty"`
	// MaxProcesses bounds this provider's agent processes on this node, warm and busy together
	// (default 16): at the bound the least recently used warm one is ended, and when none is
	// warm a new execution waits for one to be free.
	MaxProcesses int `json:"max_processes,omitempty"`
}

// settings is a validated, defaulted, private deep copy of a Config: later changes to the
// caller's Config (its Args slice or Env map) have no effect on a running provider.
type settings struct {
	id                    string
	command               string
	args                  []string
	cwd                   string
	conversationRoot      string   // "" : every conversation works in cwd
	env                   []string // "KEY=value", sorted, never nil (nil would inherit os.Environ)
	initializationTimeout time.Duration
	runTimeout            time.Duration
	shutdownGrace         time.Duration
	maxMessageBytes       int
	maxPendingPermissions int
	idleTimeout           time.Duration
	maxProcesses          int
}

func (c Config) settings() (*settings, error) {
	if strings.TrimSpace(c.Command) == "" {
		return nil, errCommandRequired
	}
	s := &settings{
		id:                    DefaultID,
		command:               c.Command,
		args:                  slices.Clone(c.Args),
		initializationTimeout: durationOr(c.InitializationTimeout, DefaultInitializationTimeout),
		runTimeout:            durationOr(c.RunTimeout, DefaultRunTimeout),
		shutdownGrace:         durationOr(c.ShutdownGrace, DefaultShutdownGrace),
		maxMessageBytes:       intOr(c.MaxMessageBytes, DefaultMaxMessageBytes),
		maxPendingPermissions: intOr(c.MaxPendingPermissions, DefaultMaxPendingPermissions),
		idleTimeout:           durationOr(c.IdleTimeout, DefaultIdleTimeout),
		maxProcesses:          intOr(c.MaxProcesses, DefaultMaxProcesses),
	}
	if c.ID != "" {
		if strings.TrimSpace(c.ID) == "" {
			return nil, errInvalidID
		}
		s.id = c.ID
	}
	for _, d := range []time.Duration{s.initializationTimeout, s.runTimeout, s.shutdownGrace, s.idleTimeout} {
		if d <= 0 || d.Milliseconds() > maxSafeInteger {
			return nil, errLimitsNotPositive
		}
	}
	for _, n := range []int{s.maxMessageBytes, s.maxPendingPermissions, s.maxProcesses} {
		if n <= 0 || n > maxSafeInteger {
			return nil, errLimitsNotPositive
		}
	}
	if s.maxMessageBytes > maxMessageBytesCeiling {
		return nil, errMessageLimitHigh
	}
	cwd, err := absoluteDir(c.Cwd)
	if err != nil {
		return nil, err
	}
	s.cwd = cwd
	if c.ConversationRoot != "" {
		root, err := absoluteDir(c.ConversationRoot)
		if err != nil {
			return nil, err
		}
		s.conversationRoot = root
	}
	s.env = make([]string, 0, len(c.Env))
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		value := c.Env[name]
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, errInvalidEnvName
		}
		if strings.ContainsRune(value, 0) {
			return nil, errInvalidEnvValue
		}
		s.env = append(s.env, name+"="+value)
	}
	return s, nil
}

// absoluteDir resolves the configured working directory once, at construction, so that a later
// os.Chdir of the server cannot move the agents (ACP also requires an absolute session cwd).
func absoluteDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("ACP cwd: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("ACP cwd: %w", err)
	}
	return abs, nil
}

func durationOr(d Duration, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return time.Duration(d)
}

func intOr(n, fallback int) int {
	if n == 0 {
		return fallback
	}
	return n
}

// Duration is a time.Duration that reads from JSON the way Caddy's caddy.Duration does: either a
// Go duration string ("10s", "500ms") or an integer number of nanoseconds. It lets the Caddy guest
// module embed Config unchanged.
type Duration time.Duration

// UnmarshalJSON accepts "1m30s"-style strings and integer nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var text string
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		parsed, err := time.ParseDuration(text)
		if err != nil {
			return err
		}
		*d = Duration(parsed)
		return nil
	}
	var nanos int64
	if err := json.Unmarshal(b, &nanos); err != nil {
		return fmt.Errorf("a duration is a string like \"10s\" or integer nanoseconds: %w", err)
	}
	*d = Duration(nanos)
	return nil
}

// MarshalJSON writes the duration string form ("10s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func TestConfigDefaults(t *testing.T) {
	s, err := Config{Command: "agent"}.settings()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	want := &settings{
		id:                    "acp",
		command:               "agent",
		cwd:                   wd,
		env:                   []string{},
		initializationTimeout: 10 * time.Second,
		runTimeout:            300 * time.Second,
		shutdownGrace:         500 * time.Millisecond,
		maxMessageBytes:       1048576,
		maxPendingPermissions: 16,
		idleTimeout:           5 * time.Minute,
		maxProcesses:          16,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("settings = %+v\nwant %+v", s, want)
	}
	if s.env == nil {
		t.Fatal("env must be empty, not nil: a nil exec.Cmd.Env inherits the server's environment")
	}
}

func TestConfigErrors(t *testing.T) {
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"no command":          {Config{}, "ACP command is required"},
		"blank command":       {Config{Command: "  "}, "ACP command is required"},
		"negative init":       {Config{Command: "a", InitializationTimeout: -1}, "ACP limits must be positive safe integers"},
		"negative run":        {Config{Command: "a", RunTimeout: Duration(-time.Second)}, "ACP limits must be positive safe integers"},
		"negative grace":      {Config{Command: "a", ShutdownGrace: -1}, "ACP limits must be positive safe integers"},
		"negative bytes":      {Config{Command: "a", MaxMessageBytes: -1}, "ACP limits must be positive safe integers"},
		"negative pending":    {Config{Command: "a", MaxPendingPermissions: -5}, "ACP limits must be positive safe integers"},
		"unsafe pending":      {Config{Command: "a", MaxPendingPermissions: 1 << 53}, "ACP limits must be positive safe integers"},
		"negative idle":       {Config{Command: "a", IdleTimeout: -1}, "ACP limits must be positive safe integers"},
		"negative processes":  {Config{Command: "a", MaxProcesses: -1}, "ACP limits must be positive safe integers"},
		"bytes over SDK line": {Config{Command: "a", MaxMessageBytes: 10*1024*1024 + 1}, "ACP max_message_bytes must not exceed 10485760"},
		"env name with =":     {Config{Command: "a", Env: map[string]string{"A=B": "c"}}, "ACP env names must be non-empty and contain neither '=' nor NUL"},
		"empty env name":      {Config{Command: "a", Env: map[string]string{"": "c"}}, "ACP env names must be non-empty and contain neither '=' nor NUL"},
		"env value with NUL":  {Config{Command: "a", Env: map[string]string{"A": "b\x00c"}}, "ACP env values must not contain NUL"},
		"blank id":            {Config{Command: "a", ID: " "}, "ACP provider id must not be blank"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("New = %v, want %q", err, tc.want)
			}
		})
	}
}

// The provider keeps its own copy: changing the caller's args or env later changes nothing.
func TestConfigIsCopied(t *testing.T) {
	cfg := Config{Command: "agent", Args: []string{"--acp"}, Env: map[string]string{"B": "2", "A": "1"}, Cwd: "relative/dir", ConversationRoot: "rel/root"}
	s, err := cfg.settings()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Args[0] = "--changed"
	cfg.Env["C"] = "3"
	if !reflect.DeepEqual(s.args, []string{"--acp"}) || !reflect.DeepEqual(s.env, []string{"A=1", "B=2"}) {
		t.Fatalf("settings changed with the caller's config: %v %v", s.args, s.env)
	}
	wd, _ := os.Getwd()
	if s.cwd != filepath.Join(wd, "relative/dir") || s.conversationRoot != filepath.Join(wd, "rel/root") {
		t.Fatalf("cwd = %s, conversation root = %s, want them made absolute", s.cwd, s.conversationRoot)
	}
}

// The Caddy guest module decodes its JSON straight into Config: durations as Caddy writes them.
func TestConfigFromCaddyJSON(t *testing.T) {
	raw := `{
		"id": "claude", "command": "npx", "args": ["-y", "@zed-industries/claude-code-acp"],
		"cwd": "/srv/work", "env": {"ANTHROPIC_API_KEY": "k"},
		"initialization_timeout": "15s", "run_timeout": 600000000000, "shutdown_grace": "1s",
		"max_message_bytes": 2097152, "max_pending_permissions": 4,
		"conversation_root": "/srv/conversations", "idle_timeout": "2m", "max_processes": 3
	}`
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	want := Config{
		ID: "claude", Command: "npx", Args: []string{"-y", "@zed-industries/claude-code-acp"},
		Cwd: "/srv/work", Env: map[string]string{"ANTHROPIC_API_KEY": "k"},
		InitializationTimeout: Duration(15 * time.Second), RunTimeout: Duration(10 * time.Minute),
		ShutdownGrace: Duration(time.Second), MaxMessageBytes: 2 << 20, MaxPendingPermissions: 4,
		ConversationRoot: "/srv/conversations", IdleTimeout: Duration(2 * time.Minute), MaxProcesses: 3,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("decoded %+v\nwant %+v", cfg, want)
	}
	out, err := json.Marshal(Config{Command: "a", ShutdownGrace: Duration(1500 * time.Millisecond)})
	if err != nil || string(out) != `{"command":"a","shutdown_grace":"1.5s"}` {
		t.Fatalf("Marshal = %s, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"run_timeout":"soon"}`), &cfg); err == nil {
		t.Fatal("an unparsable duration was accepted")
	}
}

func TestManifest(t *testing.T) {
	p, err := New(Config{Command: "agent", ID: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Manifest()
	if m.ID != "claude" || m.Name != "ACP v1 Agent Adapter" || m.Version != "0.2.0" ||
		m.ProtocolVersion != api.ProviderManifestProtocolVersionN20260902 ||
		!reflect.DeepEqual(m.Topologies, []api.RuntimeTopology{api.RuntimeTopologySubprocess}) {
		t.Fatalf("manifest = %+v", m)
	}
	wantCaps := map[string]api.SupportLevel{
		"action.approval": "native", "action.input": "unsupported", "artifact.list": "unsupported",
		"execution.cancel": "emulated", "conversation.continuity": "unsupported", "event.replay": "emulated",
		"event.streaming": "native", "extension.mcp": "unsupported", "extension.sandbox": "unsupported",
		"extension.skills": "unsupported", "extension.subagents": "unsupported",
	}
	if !reflect.DeepEqual(m.Capabilities, wantCaps) {
		t.Fatalf("capabilities = %v", m.Capabilities)
	}
	wantMeta := api.JSONObject{
		"upstream": "https://agentclientprotocol.com", "sdk": "github.com/coder/acp-go-sdk", "sdkVersion": "0.13.0",
		"nativeSessions": "per-conversation", "sessionContinuity": "unknown: the agent has not answered initialize yet",
		"clientFilesystem": false, "clientTerminal": false,
	}
	if m.Metadata == nil || !reflect.DeepEqual(*m.Metadata, wantMeta) {
		t.Fatalf("metadata = %v", m.Metadata)
	}
	def, _ := New(Config{Command: "agent"})
	if def.Manifest().ID != "acp" {
		t.Fatalf("default id = %s", def.Manifest().ID)
	}
}

// The manifest names the SDK version go.mod actually requires.
func TestManifestSDKVersionMatchesGoMod(t *testing.T) {
	goMod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(goMod), sdkModule+" v"+sdkVersion) {
		t.Fatalf("go.mod does not require %s v%s; update sdkVersion in manifest.go", sdkModule, sdkVersion)
	}
}

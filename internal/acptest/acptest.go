// Package acptest prepares the ACP test agent on the official TypeScript SDK
// (testdata/ts-agent: one script, on each pinned line of @agentclientprotocol/sdk) for the acp
// provider's tests and the binary's. It is imported only by _test.go files.
package acptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SDK is one release line of the TypeScript SDK: the npm alias it is installed under (what the
// agent's ACP_TS_SDK names) and the version package.json pins.
type SDK struct {
	Alias, Version string
}

// Agent is the prepared agent: node, the script, and the SDK lines it can run on, in alias
// order (the old line first).
type Agent struct {
	Node, Script string
	SDKs         []SDK
}

// Env is the environment the agent needs on sdk (besides what a test adds): the provider passes
// only its configured environment.
func (a Agent) Env(sdk SDK) map[string]string {
	return map[string]string{"NODE_NO_WARNINGS": "1", "ACP_TS_SDK": sdk.Alias}
}

var install struct {
	once sync.Once
	err  string
}

// agentDir is testdata/ts-agent next to this file, wherever the test runs from.
func agentDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "ts-agent")
}

// Prepare returns the agent, installing the locked dependencies with `npm ci` when
// node_modules is missing or holds other versions than the pins. Node and npm are required, not
// optional: a machine without them must fail loudly rather than skip the proof against ACP
// agents nobody here wrote.
func Prepare(t testing.TB) Agent {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the ACP tests on the TypeScript SDK (install Node.js 20+ with npm): %v", err)
	}
	dir := agentDir()
	sdks, err := pinnedSDKs(dir)
	if err != nil {
		t.Fatal(err)
	}
	install.once.Do(func() {
		// Test binaries of several packages may get here at once: one runs npm ci, the others
		// wait for it and find node_modules ready.
		unlock, err := lockFile(filepath.Join(dir, ".npm-ci.lock"))
		if err != nil {
			install.err = "lock the ACP test agent's directory for npm ci: " + err.Error()
			return
		}
		defer unlock()
		if installed(dir, sdks) {
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			install.err = "npm is required to install the TypeScript ACP SDK for the ACP tests: " + err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			install.err = "npm ci in " + dir + ": " + err.Error() + "\n" + string(out)
			return
		}
		if !installed(dir, sdks) {
			install.err = "npm ci in " + dir + " did not install the pinned SDKs"
		}
	})
	if install.err != "" {
		t.Fatal(install.err)
	}
	return Agent{Node: node, Script: filepath.Join(dir, "agent.mjs"), SDKs: sdks}
}

// pinnedSDKs reads the aliases of @agentclientprotocol/sdk from package.json, in alias order.
func pinnedSDKs(dir string) ([]SDK, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, err
	}
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return nil, err
	}
	var sdks []SDK
	for alias, spec := range manifest.Dependencies {
		if version, ok := strings.CutPrefix(spec, "npm:@agentclientprotocol/sdk@"); ok {
			sdks = append(sdks, SDK{Alias: alias, Version: version})
		}
	}
	slices.SortFunc(sdks, func(a, b SDK) int { return strings.Compare(a.Alias, b.Alias) })
	if len(sdks) < 2 {
		return nil, fmt.Errorf("%s/package.json pins %d @agentclientprotocol/sdk lines, want the old and the current one", dir, len(sdks))
	}
	return sdks, nil
}

// installed reports whether node_modules holds every pinned SDK at its pinned version.
func installed(dir string, sdks []SDK) bool {
	for _, sdk := range sdks {
		data, err := os.ReadFile(filepath.Join(dir, "node_modules", sdk.Alias, "package.json"))
		if err != nil {
			return false
		}
		var pkg struct{ Name, Version string }
		if json.Unmarshal(data, &pkg) != nil || pkg.Name != "@agentclientprotocol/sdk" || pkg.Version != sdk.Version {
			return false
		}
	}
	return true
}

func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

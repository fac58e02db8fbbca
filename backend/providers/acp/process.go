package acp

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// agentProcess is one spawned agent: its stdio pipes and the confirmation of its exit.
//
// The pipes are os.Pipe pairs handed to the child directly (no copying goroutines inside
// os/exec), so exec.Cmd.Wait never closes our ends under a concurrent reader: we own stdin and
// stdout and close them ourselves. Our ends are pollable, so Close also unblocks a Read or a Write
// stuck on a child that neither reads nor writes.
type agentProcess struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout

	exited chan struct{} // closed once Wait has reaped the child

	closeStdinOnce sync.Once
}

// startAgentProcess spawns the configured command in cwd with exactly env: the configured
// environment (and the execution's TRACEPARENT, tracing.go). The
// child's stderr goes to the null device: agent diagnostics are never read, so they can never
// leak into portable errors.
func startAgentProcess(s *settings, cwd string, env []string) (*agentProcess, error) {
	childStdin, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, childStdout, err := os.Pipe()
	if err != nil {
		closeAll(childStdin, stdin)
		return nil, err
	}
	cmd := exec.Command(s.command, s.args...)
	cmd.Dir = cwd
	cmd.Env = env // never nil: a nil Env would inherit the server's environment
	cmd.Stdin = childStdin
	cmd.Stdout = childStdout
	cmd.Stderr = nil
	// Its own process group, so teardown signals reach what the agent started too (npx runs the
	// real agent as a child of its own): signalling the direct child alone would orphan them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll(childStdin, stdin, stdout, childStdout)
		return nil, err
	}
	// The child holds its own copies now; keeping ours open would hide its exit (no EOF on stdout)
	// and its stdin close from it.
	closeAll(childStdin, childStdout)

	p := &agentProcess{cmd: cmd, stdin: stdin, stdout: stdout, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // reaps the child; its exit status means nothing to the protocol
		close(p.exited)
	}()
	return p, nil
}

func (p *agentProcess) pid() int { return p.cmd.Process.Pid }

// closeStdin is the polite first step of teardown: ACP agents exit when their input ends.
func (p *agentProcess) closeStdin() {
	p.closeStdinOnce.Do(func() { _ = p.stdin.Close() })
}

// stop runs the teardown ladder: stdin close → SIGTERM → SIGKILL to the agent's process group,
// each followed by a wait of grace, and reports whether the child's exit was confirmed (reaped)
// by the end. Once the child is gone, whatever it left behind in its group is killed: an agent
// process outliving its execution would hold resources nobody can reach any more.
func (p *agentProcess) stop(grace time.Duration) (confirmed bool) {
	defer func() {
		if confirmed {
			p.signalGroup(syscall.SIGKILL)
		}
	}()
	p.closeStdin()
	if p.waitExit(grace) {
		return true
	}
	p.signalGroup(syscall.SIGTERM)
	if p.waitExit(grace) {
		return true
	}
	p.signalGroup(syscall.SIGKILL)
	return p.waitExit(grace)
}

// signalGroup signals every process of the agent's group. The group id is the child's pid; Linux
// does not hand out a pid that is still some group's id, so after the child was reaped this
// reaches only the processes it left behind (or nobody: ESRCH, ignored).
func (p *agentProcess) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid(), sig)
}

func (p *agentProcess) waitExit(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true
	case <-timer.C:
		return false
	}
}

// releasePipes closes our remaining ends. A grandchild that inherited the child's stdout would
// otherwise keep the reader waiting for an EOF that never comes.
func (p *agentProcess) releasePipes() {
	p.closeStdin()
	_ = p.stdout.Close()
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults of the whole server, for the fault-injection suite (faults/): a stall (every process
// of the server stopped, connections kept), a crash (every process killed) and a restart on the
// same data directory and port, as an operator's service manager would restart it.

// Pause stops (SIGSTOP) the server and every backend it forked: connections stay open and
// nothing answers, as when the database's machine stalls. Resume undoes it.
func (c *Cluster) Pause() error { _, err := c.signalAll(syscall.SIGSTOP); return err }

// Resume continues (SIGCONT) the processes Pause stopped.
func (c *Cluster) Resume() error { _, err := c.signalAll(syscall.SIGCONT); return err }

// Crash kills (SIGKILL) the server and every backend at once, as a power cut or the OOM killer
// would, and waits until the server process has ended. The data directory stays for Restart.
// Only a Durable cluster keeps every acknowledged commit across it: without synchronous commit
// the last commits may still be in the server's memory.
func (c *Cluster) Crash() error {
	// Stopped first: a stopped server forks no backend and its backends keep it as their
	// parent, so the list of whom to kill is complete and stays true.
	pids, err := c.signalAll(syscall.SIGSTOP)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("pgtest: kill %d: %w", pid, err)
		}
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		return errors.New("postgres did not end after SIGKILL")
	}
	// The backends too: one still exiting keeps the server's shared memory attached, and a
	// Restart meanwhile fails ("pre-existing shared memory block is still in use").
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids[1:] {
		for alive(pid) {
			if time.Now().After(deadline) {
				return fmt.Errorf("pgtest: backend %d did not end after SIGKILL", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// alive reports whether process pid still runs: it exists and is not a zombie (a zombie has
// released its memory, shared memory included).
func alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	line := string(raw)
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(line[i+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// Restart starts the server again after Crash, on the same data directory and the same port
// (the DSNs handed out stay valid), and waits until it accepts connections: PostgreSQL replays
// its write-ahead log first.
func (c *Cluster) Restart() error {
	select {
	case <-c.exited:
	default:
		return errors.New("pgtest: Restart of a server that is still running (Crash it first)")
	}
	next, err := launch(c.bin, c.dir, c.data, c.cred, c.opts, c.Port)
	if err != nil {
		return fmt.Errorf("pgtest: restart: %w", err)
	}
	c.cmd, c.exited = next.cmd, next.exited
	return nil
}

// signalAll sends sig to the server first (so that, stopped, it forks nothing meanwhile), then
// to each of its children, and returns every process it signalled.
func (c *Cluster) signalAll(sig syscall.Signal) ([]int, error) {
	server := c.cmd.Process.Pid
	if err := syscall.Kill(server, sig); err != nil {
		return nil, fmt.Errorf("pgtest: signal %v to postgres %d: %w", sig, server, err)
	}
	children, err := childrenOf(server)
	if err != nil {
		return nil, err
	}
	for _, pid := range children {
		// A backend may end on its own meanwhile: ESRCH is not an error.
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("pgtest: signal %v to backend %d: %w", sig, pid, err)
		}
	}
	return append([]int{server}, children...), nil
}

// childrenOf lists the processes whose parent is pid, from /proc (Linux).
func childrenOf(pid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // ended meanwhile
		}
		// "pid (comm) state ppid …": comm may hold spaces and parentheses, so cut at the last ')'.
		line := string(raw)
		i := strings.LastIndexByte(line, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(line[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			out = append(out, child)
		}
	}
	return out, nil
}

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU time of the server (from /proc/<pid>/stat) and of the load tool itself (getrusage), so a
// phase can report what each unit of work cost in CPU, not only how fast it went: on a shared
// machine throughput moves with the neighbours' load, CPU per execution much less.

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports (the kernel exports that value to user space whatever its HZ).
const clockTicks = 100

// procCPU is the user+system CPU time the process pid has used so far, and whether it could be
// read.
func procCPU(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// procSyscalls is the number of read-like and write-like system calls (syscr, syscw of
// /proc/<pid>/io: read, write, readv, pwrite… on sockets and files alike) the process pid made so
// far. Unlike CPU time, the count per execution barely moves with the machine's load, so it
// shows what a change to the write path bought.
func procSyscalls(pid int) (reads, writes int64, ok bool) {
	if pid <= 0 {
		return 0, 0, false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, false
	}
	var gotR, gotW bool
	for line := range strings.SplitSeq(string(raw), "\n") {
		name, value, _ := strings.Cut(line, ":")
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		switch {
		case err != nil:
		case name == "syscr":
			reads, gotR = n, true
		case name == "syscw":
			writes, gotW = n, true
		}
	}
	return reads, writes, gotR && gotW
}

// selfCPU is the load tool's own user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter measures the CPU the server and the load tool spend between start and stop.
type cpuMeter struct {
	pid            int
	server0, self0 time.Duration
	serverOK       bool
	Server, Self   time.Duration
	serverKnown    bool
	// Server system calls over the phase (see procSyscalls).
	reads0, writes0 int64
	ioOK            bool
	Reads, Writes   int64
}

func startCPU(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid}
	m.server0, m.serverOK = procCPU(pid)
	m.self0 = selfCPU()
	m.reads0, m.writes0, m.ioOK = procSyscalls(pid)
	return m
}

func (m *cpuMeter) stop() *cpuMeter {
	m.Self = selfCPU() - m.self0
	if s, ok := procCPU(m.pid); ok && m.serverOK {
		m.Server, m.serverKnown = s-m.server0, true
	}
	if r, w, ok := procSyscalls(m.pid); ok && m.ioOK {
		m.Reads, m.Writes = r-m.reads0, w-m.writes0
	} else {
		m.ioOK = false
	}
	return m
}

// per returns the server's and the load tool's CPU per unit in µs (server -1 when unknown).
func (m *cpuMeter) per(units int64) (serverUs, selfUs float64) {
	if units <= 0 {
		return -1, -1
	}
	serverUs = -1
	if m.serverKnown {
		serverUs = float64(m.Server.Microseconds()) / float64(units)
	}
	return serverUs, float64(m.Self.Microseconds()) / float64(units)
}

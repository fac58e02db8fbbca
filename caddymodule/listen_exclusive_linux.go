package caddymodule

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listenerOwner is the process holding a listening socket, as far as /proc shows it.
type listenerOwner struct {
	pid     int    // 0: not found (another user's process, whose fds this one cannot read)
	command string // its /proc/PID/comm
}

func (o *listenerOwner) String() string {
	if o.pid == 0 {
		return "its process id is not readable here"
	}
	return fmt.Sprintf("pid %d, %s", o.pid, o.command)
}

// otherListener returns the owner of a TCP socket listening on port at one of ips (nil: any
// address) that is not this process's own, or nil when there is none.
func otherListener(ips []net.IP, port uint) (*listenerOwner, error) {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listeningInodes(table, ips, port, inodes); err != nil {
			return nil, err
		}
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	for inode := range socketInodes("/proc/self/fd") {
		delete(inodes, inode)
	}
	if len(inodes) == 0 {
		return nil, nil
	}
	return ownerOf(inodes), nil
}

// listeningInodes adds to inodes the sockets of table (/proc/net/tcp's format) that listen on
// port at an address overlapping ips.
func listeningInodes(table string, ips []net.IP, port uint, inodes map[string]bool) error {
	f, err := os.Open(table)
	if os.IsNotExist(err) {
		return nil // no IPv6 in this kernel
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		ip, p, ok := parseProcAddress(fields[1])
		if ok && p == port && overlaps(ip, ips) {
			inodes[fields[9]] = true
		}
	}
	return sc.Err()
}

// parseProcAddress reads "0100007F:10E6": the address as the kernel's 32-bit words in host
// byte order (little-endian here), the port in hex.
func parseProcAddress(s string) (net.IP, uint, bool) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	for word := 0; word < len(raw); word += 4 {
		w := raw[word : word+4]
		w[0], w[1], w[2], w[3] = w[3], w[2], w[1], w[0]
	}
	return net.IP(raw), uint(port), true
}

// socketInodes yields the socket inodes among the open files in dir (/proc/PID/fd).
func socketInodes(dir string) map[string]bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	found := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			found[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return found
}

// ownerOf finds a process holding one of inodes, for the refusal to name it.
func ownerOf(inodes map[string]bool) *listenerOwner {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for inode := range socketInodes(filepath.Join("/proc", p.Name(), "fd")) {
			if inodes[inode] {
				comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
				return &listenerOwner{pid: pid, command: strings.TrimSpace(string(comm))}
			}
		}
	}
	return &listenerOwner{}
}

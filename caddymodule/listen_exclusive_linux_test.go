package caddymodule

import (
	"net"
	"testing"
)

// This process's own listener never counts as another's: a reload binds the address again
// beside it, and the http app may have bound it before the harness app starts.
func TestOtherListenerIgnoresThisProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := uint(l.Addr().(*net.TCPAddr).Port)
	if !hasListener(t, port) {
		t.Fatalf("/proc/net/tcp shows no listener on port %d: the table was misread", port)
	}
	for _, ips := range [][]net.IP{nil, {net.ParseIP("127.0.0.1")}} {
		if other, err := otherListener(ips, port); err != nil || other != nil {
			t.Errorf("otherListener(%v, %d) = %v, %v; want none: the listener is this process's", ips, port, other, err)
		}
	}
}

// hasListener reports whether the kernel's table shows a listener on port at all.
func hasListener(t *testing.T, port uint) bool {
	inodes := map[string]bool{}
	if err := listeningInodes("/proc/net/tcp", nil, port, inodes); err != nil {
		t.Fatal(err)
	}
	return len(inodes) > 0
}

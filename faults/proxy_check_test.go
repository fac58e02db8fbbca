package faults

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"
)

// The proxy's controls do what the scenarios rely on, checked against an echo server: Pause
// holds bytes without closing, Heal delivers what was held, Drop ends open connections and
// refuses new ones until Heal.
func TestProxyControls(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s := bufio.NewScanner(c)
				for s.Scan() {
					fmt.Fprintln(c, s.Text())
				}
			}()
		}
	}()
	p := startProxy(t, echo.Addr().String())
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.Port()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	roundTrip := func(c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
		fmt.Fprintln(c, line)
		c.SetReadDeadline(time.Now().Add(wait))
		return r.ReadString('\n')
	}

	c, r := dial()
	if got, err := roundTrip(c, r, "one", 5*time.Second); err != nil || got != "one\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	p.Pause()
	if got, err := roundTrip(c, r, "two", 300*time.Millisecond); err == nil {
		t.Fatalf("a paused proxy forwarded %q", got)
	}
	p.Heal()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after Heal, what was held: %q, %v", got, err)
	}
	p.Drop()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err == nil {
		t.Fatalf("a connection open at Drop still reads %q", got)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection open at Drop was not closed")
	}
	nc, nr := dial()
	if got, err := roundTrip(nc, nr, "three", 5*time.Second); err == nil {
		t.Fatalf("a dropped proxy forwarded a new connection: %q", got)
	}
	p.Heal()
	hc, hr := dial()
	if got, err := roundTrip(hc, hr, "four", 5*time.Second); err != nil || got != "four\n" {
		t.Fatalf("after Heal, a new connection: %q, %v", got, err)
	}
}

package pgtest

import (
	"net"
	"sync"
)

// Proxy forwards TCP connections from a local port to upstream (PostgreSQL), so that a fault
// can be injected between one node and the database without touching either (the fault suite
// and harness-nemesis put one in front of each node's connections):
//
//   - Pause: bytes stop flowing both ways, connections stay open (a stall: the node's queries
//     hang, as they would behind a congested link or a frozen database).
//   - Drop: every connection is closed and new ones are closed as soon as they arrive (a
//     partition: the node sees its database go away).
//   - Heal: back to forwarding.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // both ends of every open pipe
	paused  bool
	resumed chan struct{} // closed by Heal or Drop when paused
	dropped bool
	closed  bool
	wg      sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to upstream until Close.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Port is where the proxy listens.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Pause stops bytes both ways; connections stay open.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resumed = true, make(chan struct{})
	}
}

// Drop closes every connection and refuses new ones until Heal.
func (p *Proxy) Drop() {
	p.mu.Lock()
	p.dropped = true
	p.unpauseLocked()
	conns := p.takeConnsLocked()
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Heal goes back to forwarding.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped = false
	p.unpauseLocked()
}

func (p *Proxy) unpauseLocked() {
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
}

func (p *Proxy) takeConnsLocked() []net.Conn {
	out := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	clear(p.conns)
	return out
}

// Close ends every connection and stops listening.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.unpauseLocked()
	conns := p.takeConnsLocked()
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.pipe(client) }()
	}
}

// pipe connects client to a new upstream connection and copies both ways until either ends.
func (p *Proxy) pipe(client net.Conn) {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		client.Close() // the database is down: so is the connection through the proxy
		return
	}
	if !p.track(client, up) {
		client.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	for _, dir := range [][2]net.Conn{{up, client}, {client, up}} {
		go func() {
			p.copy(dir[0], dir[1])
			dir[0].Close() // one side ended: end the other too
			dir[1].Close()
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, up)
	p.mu.Unlock()
}

// track registers a pipe's two ends; false when the proxy is dropped or closed (refuse it).
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped || p.closed {
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

// copy forwards src to dst, holding each chunk while the proxy is paused.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.flowing() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// flowing waits while the proxy is paused; false once it is dropped or closed.
func (p *Proxy) flowing() bool {
	for {
		p.mu.Lock()
		if p.dropped || p.closed {
			p.mu.Unlock()
			return false
		}
		if !p.paused {
			p.mu.Unlock()
			return true
		}
		resumed := p.resumed
		p.mu.Unlock()
		<-resumed
	}
}

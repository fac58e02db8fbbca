package caddymodule

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// A second server started on an address another one already serves must refuse to start.
// Caddy binds its TCP listeners with SO_REUSEPORT (listen_unix.go), on purpose: a reload binds
// the new config's listeners while the old config's still serve, in the same process. On Linux
// the option also lets a second process of the same user bind the same address, so a second
// bin/caddy (another admin address, another data directory) started on a served port would
// start without a word, and the kernel would spread the connections between the two servers,
// each answering from its own store.
//
// Binding a probe socket first cannot tell the two cases apart (this process's own listeners,
// from the config being replaced or from the http app started before this one, conflict with
// it just the same), and a lock file keyed by address would miss a server that is not a
// harness-edge one, or one run by another user or with another temporary directory. What the
// kernel says can: the listening sockets on the address (/proc/net/tcp, tcp6) that are not
// this process's own (/proc/self/fd). A listener of another process there refuses the start.

// refuseServedAddresses fails when a TCP address a server of this config listens on is already
// served by another process. It runs at the harness app's Start, before or after the http app
// has bound its listeners (Caddy starts apps in no set order): this process's own listeners
// never count.
func refuseServedAddresses(ctx caddy.Context) error {
	app, err := ctx.AppIfConfigured("http")
	if errors.Is(err, caddy.ErrNotConfigured) {
		return nil
	}
	if err != nil {
		return err
	}
	httpApp, ok := app.(*caddyhttp.App)
	if !ok {
		return nil
	}
	for _, srv := range httpApp.Servers {
		for _, listen := range srv.Listen {
			addr, err := caddy.ParseNetworkAddress(listen)
			if err != nil || !strings.HasPrefix(addr.Network, "tcp") {
				continue // Caddy reports a bad address itself; unix sockets are unlinked, not shared
			}
			for port := addr.StartPort; port <= addr.EndPort; port++ {
				if err := refuseServed(addr.Host, port); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// refuseServed fails when another process listens on host:port (host empty: every address).
func refuseServed(host string, port uint) error {
	ips, err := listenIPs(host)
	if err != nil {
		return nil // Caddy's own bind reports an address that does not resolve
	}
	other, err := otherListener(ips, port)
	if err != nil || other == nil {
		return err
	}
	hostPort := net.JoinHostPort(host, strconv.FormatUint(uint64(port), 10))
	return fmt.Errorf("%s is already served by another process (%s): refusing to start a second server on it, "+
		"which would share the port with it (Caddy binds with SO_REUSEPORT) so that requests alternate between the two; "+
		"stop the other server or listen elsewhere ('ss -ltnp' shows who listens)", hostPort, other)
}

// listenIPs is what host binds to: nil for every address.
func listenIPs(host string) ([]net.IP, error) {
	if host == "" {
		return nil, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() {
			return nil, nil
		}
		return []net.IP{ip}, nil
	}
	return net.LookupIP(host)
}

// overlaps reports whether a listener bound to bound takes connections to one of ips (nil:
// every address).
func overlaps(bound net.IP, ips []net.IP) bool {
	if ips == nil || bound.IsUnspecified() {
		return true
	}
	for _, ip := range ips {
		if ip.Equal(bound) {
			return true
		}
	}
	return false
}

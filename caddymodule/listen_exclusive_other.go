//go:build !linux

package caddymodule

import "net"

// otherListener finds nothing outside Linux: the check reads Linux's /proc
// (listen_exclusive_linux.go). Elsewhere SO_REUSEPORT is left as Caddy sets it.
func otherListener([]net.IP, uint) (*listenerOwner, error) { return nil, nil }

type listenerOwner struct{}

func (*listenerOwner) String() string { return "" }

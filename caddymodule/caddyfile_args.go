package caddymodule

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"
)

// The settings of the harness directive and of its provider blocks take their values in the same
// few forms; these read one argument of each form, so every setting reports errors alike.

// durationArg reads the single argument of setting as a Caddy duration (500ms, 2m, 7d).
func durationArg(d *caddyfile.Dispenser, setting string) (time.Duration, error) {
	var raw string
	if !d.AllArgs(&raw) {
		return 0, d.ArgErr()
	}
	dur, err := caddy.ParseDuration(raw)
	if err != nil {
		return 0, d.Errf("%s: %v", setting, err)
	}
	return dur, nil
}

// sizeArg reads the single argument of setting as a byte size with request_body's syntax (1MiB,
// 512KB, 1048576), at most max.
func sizeArg(d *caddyfile.Dispenser, setting string, max uint64) (uint64, error) {
	var raw string
	if !d.AllArgs(&raw) {
		return 0, d.ArgErr()
	}
	size, err := humanize.ParseBytes(raw)
	if err != nil {
		return 0, d.Errf("%s: %v", setting, err)
	}
	if size > max {
		return 0, d.Errf("%s: %s is too large", setting, raw)
	}
	return size, nil
}

// countArg reads the single argument of setting as a whole number of at least 1.
func countArg(d *caddyfile.Dispenser, setting string) (int, error) {
	var raw string
	if !d.AllArgs(&raw) {
		return 0, d.ArgErr()
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, d.Errf("%s: %q is not a whole number of at least 1", setting, raw)
	}
	return n, nil
}

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

// stringArg reads the single argument of a setting into dst.
func stringArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.AllArgs(dst) {
		return d.ArgErr()
	}
	return nil
}

// durationSetting reads the single argument of setting as a Caddy duration into dst.
func durationSetting[D ~int64](d *caddyfile.Dispenser, setting string, dst *D) error {
	dur, err := durationArg(d, setting)
	if err != nil {
		return err
	}
	*dst = D(dur)
	return nil
}

// namedValueArg reads `setting <name> <value>` into values (made when nil), refusing a name
// given twice: a provider's header, an agent's environment variable.
func namedValueArg(d *caddyfile.Dispenser, setting string, values *map[string]string) error {
	var name, value string
	if !d.AllArgs(&name, &value) {
		return d.ArgErr()
	}
	if *values == nil {
		*values = make(map[string]string)
	}
	if _, dup := (*values)[name]; dup {
		return d.Errf("%s %s is set twice", setting, name)
	}
	(*values)[name] = value
	return nil
}

// providerBlock reads a provider block, `<module> [<id>] { … }`: the optional id into id, then
// each setting through setting, which reports false for a name it does not know.
func providerBlock(d *caddyfile.Dispenser, id *string, setting func(name string) (known bool, err error)) error {
	d.Next() // the module name
	module := d.Val()
	if d.NextArg() {
		*id = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		name := d.Val()
		known, err := setting(name)
		if err != nil {
			return err
		}
		if !known {
			return d.Errf("unrecognized %s provider setting %q", module, name)
		}
	}
	return nil
}

// replacedValues is a copy of values with the known placeholders of each value replaced (a
// provider's headers, an agent's environment); nil for none.
func replacedValues(repl *caddy.Replacer, values map[string]string) map[string]string {
	if len(values) == 0 {
		return nil
	}
	out := make(map[string]string, len(values))
	for name, value := range values {
		out[name] = repl.ReplaceKnown(value, "")
	}
	return out
}

package caddymodule

import (
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
)

func init() {
	caddy.RegisterModule(new(BoltStore))
}

// BoltStore is the embedded store, harness.stores.bolt: one bbolt file (harness.db) in a
// directory, for one process. It is the default, and what the handler's data_dir names.
//
//	"store": {"backend": "bolt", "path": "/var/lib/harness"}
//
// Caddyfile: `store bolt <dir>` or `store bolt { path <dir>; commit_linger <duration> }`.
type BoltStore struct {
	// Directory of the store file, created if missing. Default: the "harness" folder in
	// Caddy's data directory ({caddy.AppDataDir}/harness).
	Path string `json:"path,omitempty"`
	// CommitLinger is how long a group commit waits for the writes of other executions to join
	// it while writers are concurrent (store_linger.go). Default 2ms; 0 turns it off; at most 100ms.
	CommitLinger *caddy.Duration `json:"commit_linger,omitempty"`

	abs string // the absolute directory, set by Provision
}

// CaddyModule returns the Caddy module information.
func (*BoltStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "harness.stores.bolt",
		New: func() caddy.Module { return new(BoltStore) },
	}
}

// Provision resolves the directory to an absolute path: the store's identity.
func (b *BoltStore) Provision(caddy.Context) error {
	if _, err := commitLinger(b.CommitLinger, "bolt"); err != nil {
		return err
	}
	return b.resolve()
}

func (b *BoltStore) resolve() error {
	dir := b.Path
	if dir == "" {
		dir = filepath.Join(caddy.AppDataDir(), "harness")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("store bolt path %q: %w", dir, err)
	}
	b.abs = abs
	return nil
}

// StoreKey is "bolt:" and the absolute directory.
func (b *BoltStore) StoreKey() string { return "bolt:" + b.abs }

// Dir is the absolute directory of the store file.
func (b *BoltStore) Dir() string { return b.abs }

// OpenStore opens the file; another process's lock fails after a short wait with
// store.ErrLocked.
func (b *BoltStore) OpenStore(opts StoreOptions) (store.Store, error) {
	linger, err := commitLinger(b.CommitLinger, "bolt")
	if err != nil {
		return nil, err
	}
	s, err := bolt.Open(b.abs, bolt.Options{Observe: opts.ObserveCommit, CommitLinger: linger})
	if err != nil {
		return nil, fmt.Errorf("opening the harness store in %s: %w", b.abs, err)
	}
	return s, nil
}

// UnmarshalCaddyfile parses `bolt <dir>` or `bolt { path <dir> }`.
func (b *BoltStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module name
	if d.NextArg() {
		b.Path = d.Val()
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "path":
			if b.Path != "" {
				return d.Err("store bolt: path given twice")
			}
			if !d.AllArgs(&b.Path) {
				return d.ArgErr()
			}
		case "commit_linger":
			var value string
			if !d.AllArgs(&value) {
				return d.ArgErr()
			}
			linger, err := parseCommitLinger(value, "bolt")
			if err != nil {
				return d.Err(err.Error())
			}
			b.CommitLinger = linger
		default:
			return d.Errf("unrecognized store bolt setting %q", d.Val())
		}
	}
	return nil
}

var (
	_ StoreModule           = (*BoltStore)(nil)
	_ caddy.Provisioner     = (*BoltStore)(nil)
	_ caddyfile.Unmarshaler = (*BoltStore)(nil)
)

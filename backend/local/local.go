// Package local assembles a runtime on one machine: package backend over its default store, a
// bbolt file in a directory (package store/bolt). The runtime takes its store and imports no
// store driver, so the choice of driver is made where a program is assembled: the Caddy module
// chooses from its configuration (bolt or postgres); an embedder, a test or a tool that wants
// the single-node default calls Open here.
package local

import (
	"fmt"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
)

// FileName is the bbolt file that Open creates inside its directory: a backup restores it
// there (backend.(*Runtime).Backup).
const FileName = bolt.FileName

// Open opens the runtime over a bbolt store in dir (one file, FileName, created if missing,
// with dir). opts.Store must be nil: the store is this one. As with backend.Open, the runtime
// owns the store, so Close closes it, and so does an Open that fails.
func Open(dir string, opts backend.Options) (*backend.Runtime, error) {
	if opts.Store != nil {
		return nil, fmt.Errorf("local.Open: Options.Store is set; call backend.Open to use it")
	}
	var observe bolt.Options
	if opts.Observer != nil {
		observe.Observe = opts.Observer.StoreCommit
	}
	st, err := bolt.Open(dir, observe)
	if err != nil {
		return nil, fmt.Errorf("backend: open store: %w", err)
	}
	opts.Store = st
	return backend.Open(opts)
}

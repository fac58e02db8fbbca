package caddymodule

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/harness-edge/harness-edge/backend/store"
)

// StoreModule is a guest module in the namespace harness.stores: where the runtime keeps its
// executions. harness.stores.bolt (store_bolt.go) is the embedded default; a store shared by
// several nodes registers its own module the same way, in a file of its own.
//
// A store is opened once per process for every handler (and every config, across reloads)
// that names the same one: the runtime pool is keyed by StoreKey, as Mercure keys its bolt
// transports. So StoreKey must identify the data itself — two modules whose keys are equal
// must open the same store, and two that would open the same store must have equal keys (an
// absolute path, a normalised connection string) — else two runtimes would write one store.
type StoreModule interface {
	// StoreKey identifies the store, e.g. "bolt:/var/lib/harness". Called after Provision.
	StoreKey() string
	// OpenStore opens the store. An error matching store.ErrLocked means another process holds
	// it for now: the handler then opens it on its first request instead (see sharedRuntime.start).
	OpenStore(opts StoreOptions) (store.Store, error)
}

// StoreOptions is what the handler hands a StoreModule when it opens the store.
type StoreOptions struct {
	// Logger is the handler's logger.
	Logger *slog.Logger
	// ObserveCommit, when set, is told how long each write transaction took (the
	// harness_store_commit_seconds metric).
	ObserveCommit func(time.Duration)
}

// loadStore provisions the handler's store module: the one in StoreRaw, or else the bolt store
// in DataDir (its default directory when DataDir is empty too).
func (h *Harness) loadStore(ctx caddy.Context) error {
	if h.StoreRaw != nil {
		mod, err := ctx.LoadModule(h, "StoreRaw")
		if err != nil {
			return fmt.Errorf("loading the store module: %w", err)
		}
		st, ok := mod.(StoreModule)
		if !ok {
			return fmt.Errorf("module %T in harness.stores is not a store", mod)
		}
		h.store = st
	} else {
		b := &BoltStore{Path: h.DataDir}
		if err := b.resolve(); err != nil {
			return err
		}
		h.store = b
	}
	h.storeKey = h.store.StoreKey()
	return nil
}

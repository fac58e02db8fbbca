package caddymodule

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

func init() {
	caddy.RegisterModule(adminBackup{})
}

// adminBackup adds GET /harness/backup to Caddy's admin API: an online backup of a running
// harness store, streamed while executions go on (bbolt's Tx.WriteTo, one consistent read
// transaction), so that
//
//	curl -fsS localhost:2019/harness/backup > harness.db.bak
//
// makes a file that a stopped server can be restored from by putting it in place of
// harness.db (docs/operations.md). The admin API is loopback-only by default; whoever reaches
// it can also load any config, so it needs no extra protection here.
//
// The store is found through the runtime pool, that is among the stores the loaded config
// serves. With one, it is the default; with several, ?store= names one by its key (e.g.
// bolt:/var/lib/harness) or ?data_dir= a bolt store by its directory (as configured, or
// absolute); with none, the answer is 404. A store that has no backup of its own (a database
// server) answers 501.
type adminBackup struct {
	logger *slog.Logger
}

// CaddyModule returns the Caddy module information.
func (adminBackup) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.harness",
		New: func() caddy.Module { return new(adminBackup) },
	}
}

// Provision keeps Caddy's logger.
func (a *adminBackup) Provision(ctx caddy.Context) error {
	a.logger = ctx.Slogger()
	return nil
}

// Routes returns the admin routes of the harness module.
func (a *adminBackup) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/harness/backup", Handler: caddy.AdminHandlerFunc(a.serveBackup)}}
}

func (a *adminBackup) serveBackup(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method %s not allowed, use GET", r.Method)}
	}
	shared, err := runtimeToBackUp(r.URL.Query().Get("store"), r.URL.Query().Get("data_dir"))
	if err != nil {
		return err
	}
	rt, err := shared.runtime()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: fmt.Errorf("the harness store %s is not open: %w", shared.key, err)}
	}
	// The headers are only sent with the first byte: a store that cannot back up (below)
	// still answers a plain error.
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="harness.db"`)
	w.Header().Set("Cache-Control", "no-store")
	n, err := rt.Backup(w)
	if err == nil {
		a.logger.Info("harness store backed up", slog.String("store", shared.key), slog.Int64("bytes", n))
		return nil
	}
	if n == 0 && errors.Is(err, errors.ErrUnsupported) {
		w.Header().Del("Content-Disposition")
		w.Header().Del("Content-Type")
		return caddy.APIError{HTTPStatus: http.StatusNotImplemented, Err: fmt.Errorf(
			"the harness store %s cannot be backed up through Caddy: back it up with the database's own tools (docs/operations.md)", shared.key)}
	}
	a.logger.Error("harness store backup failed", slog.String("store", shared.key), slog.Int64("bytes_written", n), slog.Any("error", err))
	if n == 0 {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: fmt.Errorf("backup of %s: %w", shared.key, err)}
	}
	// Part of the file is out: break the connection, so the client sees an incomplete
	// transfer (curl exits non-zero) instead of a short file that looks whole.
	panic(http.ErrAbortHandler)
}

// runtimeToBackUp picks the shared runtime of the store named by key (a StoreKey) or, for the
// bolt store, by dataDir (its directory, as configured or absolute); the only one when both
// are empty.
func runtimeToBackUp(key, dataDir string) (*sharedRuntime, error) {
	var all []*sharedRuntime
	runtimePool.Range(func(_, value any) bool {
		all = append(all, value.(*sharedRuntime))
		return true
	})
	slices.SortFunc(all, func(a, b *sharedRuntime) int { return strings.Compare(a.key, b.key) })
	keys := make([]string, len(all))
	for i, s := range all {
		keys[i] = s.key
	}
	if dataDir != "" {
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return nil, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("data_dir %q: %w", dataDir, err)}
		}
		key = (&BoltStore{abs: abs}).StoreKey()
	}
	switch {
	case key != "":
		if i := slices.Index(keys, key); i >= 0 {
			return all[i], nil
		}
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no harness handler serves the store %s (served: %s)", key, strings.Join(keys, ", "))}
	case len(all) == 1:
		return all[0], nil
	case len(all) == 0:
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("no harness handler is configured, so there is no store to back up")}
	default:
		return nil, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("several harness stores are open; choose one with ?store= or, for a bolt store, ?data_dir= (one of: %s)", strings.Join(keys, ", "))}
	}
}

// Interface guards
var (
	_ caddy.Module      = (*adminBackup)(nil)
	_ caddy.Provisioner = (*adminBackup)(nil)
	_ caddy.AdminRouter = (*adminBackup)(nil)
)

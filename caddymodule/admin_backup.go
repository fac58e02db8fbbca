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
// The store is found through the runtime pool, that is among the data directories the loaded
// config serves. With one, it is the default; with several, ?data_dir= names one (as
// configured, or absolute); with none, the answer is 404.
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
	shared, err := runtimeToBackUp(r.URL.Query().Get("data_dir"))
	if err != nil {
		return err
	}
	rt, err := shared.runtime()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: fmt.Errorf("the harness store in %s is not open: %w", shared.dir, err)}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="harness.db"`)
	w.Header().Set("Cache-Control", "no-store")
	n, err := rt.Backup(w)
	if err == nil {
		a.logger.Info("harness store backed up", slog.String("data_dir", shared.dir), slog.Int64("bytes", n))
		return nil
	}
	a.logger.Error("harness store backup failed", slog.String("data_dir", shared.dir), slog.Int64("bytes_written", n), slog.Any("error", err))
	if n == 0 {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: fmt.Errorf("backup of %s: %w", shared.dir, err)}
	}
	// Part of the file is out: break the connection, so the client sees an incomplete
	// transfer (curl exits non-zero) instead of a short file that looks whole.
	panic(http.ErrAbortHandler)
}

// runtimeToBackUp picks the shared runtime of dataDir, or the only one when dataDir is empty.
func runtimeToBackUp(dataDir string) (*sharedRuntime, error) {
	var all []*sharedRuntime
	runtimePool.Range(func(_, value any) bool {
		all = append(all, value.(*sharedRuntime))
		return true
	})
	slices.SortFunc(all, func(a, b *sharedRuntime) int { return strings.Compare(a.dir, b.dir) })
	dirs := make([]string, len(all))
	for i, s := range all {
		dirs[i] = s.dir
	}
	switch {
	case dataDir != "":
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return nil, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("data_dir %q: %w", dataDir, err)}
		}
		if i := slices.Index(dirs, abs); i >= 0 {
			return all[i], nil
		}
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: fmt.Errorf("no harness handler serves data_dir %s (served: %s)", abs, strings.Join(dirs, ", "))}
	case len(all) == 1:
		return all[0], nil
	case len(all) == 0:
		return nil, caddy.APIError{HTTPStatus: http.StatusNotFound, Err: errors.New("no harness handler is configured, so there is no store to back up")}
	default:
		return nil, caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: fmt.Errorf("several harness data directories are open; choose one with ?data_dir= (one of: %s)", strings.Join(dirs, ", "))}
	}
}

// Interface guards
var (
	_ caddy.Module      = (*adminBackup)(nil)
	_ caddy.Provisioner = (*adminBackup)(nil)
	_ caddy.AdminRouter = (*adminBackup)(nil)
)

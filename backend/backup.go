package backend

import (
	"io"
)

// Backup writes a consistent copy of the running store to w (the bbolt store: one file, taken in
// a single read transaction while executions go on, holding everything committed before it
// began; a store that cannot answers an error wrapping errors.ErrUnsupported). Restoring a bbolt
// backup is replacing the store's file (bolt.FileName) in a stopped server's data directory with
// it (see docs/operations.md). It returns the bytes written; on error what was written is incomplete.
func (r *Runtime) Backup(w io.Writer) (int64, error) {
	if err := r.checkOpen(); err != nil {
		return 0, err
	}
	n, err := r.store.Backup(w)
	if err != nil {
		return n, storeError("backup", err)
	}
	return n, nil
}

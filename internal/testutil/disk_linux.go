package testutil

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of the given size on a fresh directory and unmounts it when the
// test ends (after what the test opened later is closed: cleanups run last-in first-out). It
// is how a test fills a real disk. Mounting needs root or CAP_SYS_ADMIN: elsewhere the test
// skips, saying how to run it (CI runs as root).
func MountTmpfs(t testing.TB, size, run string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("this test fills a real disk and needs to mount a %s tmpfs, which failed here (%v): "+
			"run it as root or with CAP_SYS_ADMIN (CI runs as root), e.g. `sudo go test -race -run %s`", size, err, run)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// FillFile writes size bytes to path, or as many as fit.
func FillFile(t testing.TB, path string, size int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0xa5}, 64<<10)
	for written := 0; written < size; written += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// GoBinary builds one main package once per test process (the real binary a suite runs, such
// as cmd/caddy) into a temporary directory, which Remove deletes (call it from TestMain after
// m.Run). The directory is world-readable, so that a binary started as an unprivileged user
// can reach it. The zero value is ready to use; Flags are go build's (e.g. "-race").
type GoBinary struct {
	Package string // as go build takes it: ".", "../cmd/caddy"
	Flags   []string

	once sync.Once
	bin  string
	err  error
}

// Path builds the binary the first time and returns its path; a failed build fails t.
func (b *GoBinary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "harness-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, filepath.Base(b.name()))
		args := append(append([]string{"build", "-o", b.bin}, b.Flags...), b.Package)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", b.Package, err, out)
			return
		}
		b.err = os.Chmod(dir, 0o755)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// name is the binary's file name: the package directory's, or the working directory's for ".".
func (b *GoBinary) name() string {
	if b.Package == "." || b.Package == "" {
		wd, err := os.Getwd()
		if err == nil {
			return wd
		}
	}
	return b.Package
}

// Remove deletes the built binary, if any.
func (b *GoBinary) Remove() {
	if b.bin != "" {
		_ = os.RemoveAll(filepath.Dir(b.bin))
	}
}

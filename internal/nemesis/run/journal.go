package run

import (
	"os"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// journal is the history file (docs/nemesis.md, "History format") and its writer, which every
// client, stream and fault injector writes through at once.
type journal struct {
	f *os.File
	*history.Writer
}

func openJournal(path string) (*journal, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &journal{f: f, Writer: history.NewWriter(f)}, nil
}

func (j *journal) close() error {
	err := j.Flush()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}

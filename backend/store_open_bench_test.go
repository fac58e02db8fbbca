package backend_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/backend/local"
	"github.com/harness-edge/harness-edge/backend/providers/mock"
)

// BenchmarkOpenStore measures what the damaged-file check adds to opening a store: bbolt's
// own Open (which, without a synced freelist, already walks every page) against backend.Open
// (the read-only check pass, then the same Open and recovery) on a 128 MiB store.
func BenchmarkOpenStore(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, local.FileName)
	rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}})
	if err != nil {
		b.Fatal(err)
	}
	rt.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	for batch := range 128 {
		err := db.Update(func(tx *bolt.Tx) error {
			events := tx.Bucket([]byte("events"))
			events.FillPercent = 0.9
			for i := range 1024 {
				key := make([]byte, 8)
				binary.BigEndian.PutUint64(key, uint64(batch*1024+i))
				if err := events.Put(append([]byte("exec_00000000000000000000000000000000"), key...), value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	db.Close()

	b.Run("bbolt.Open", func(b *testing.B) {
		for b.Loop() {
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
	b.Run("backend.Open", func(b *testing.B) {
		for b.Loop() {
			rt, err := local.Open(dir, backend.Options{Providers: []backend.Provider{mock.New()}})
			if err != nil {
				b.Fatal(err)
			}
			rt.Close()
		}
	})
}

package bolt_test

import (
	"testing"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/backend/store/bolt"
	"github.com/harness-edge/harness-edge/backend/store/storetest"
)

// The contract suite, on a real bbolt file.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := bolt.Open(t.TempDir(), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

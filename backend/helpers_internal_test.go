package backend

import "github.com/harness-edge/harness-edge/backend/store/bolt"

// openInDir opens a runtime over a bbolt store in dir, as package local does for everyone
// else: this package's own tests cannot import local, which imports this package.
func openInDir(dir string, opts Options) (*Runtime, error) {
	st, err := bolt.Open(dir, bolt.Options{})
	if err != nil {
		return nil, err
	}
	opts.Store = st
	return Open(opts)
}

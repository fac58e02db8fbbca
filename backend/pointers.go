package backend

// Small helpers for optional values (the generated wire types use pointers for them).

func ptr[T any](v T) *T { return &v }

// clonePtr copies what p points at, so the copy shares nothing with the original.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// deref is what p points at, or the zero value.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

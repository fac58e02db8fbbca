package sdk_test

// typed unwraps an event's typed data, as read with the generated accessors of api.EventData
// (AsActionRequest, AsRunCompletedData, …): data that does not decode as the event's type means
// a broken server or test, so it panics with the error rather than compare zero values.
func typed[T any](data T, err error) T {
	if err != nil {
		panic(err)
	}
	return data
}

// deref is the value of an optional field of event data (such as RunCancelledData.Reason), the
// zero value when it is absent.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

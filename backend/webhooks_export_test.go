package backend

// PendingWebhooks counts the notifications waiting in the outbox.
func PendingWebhooks(r *Runtime) (int, error) { return r.store.PendingNotifications() }

// FailedWebhooks returns, for each notification of the execution recorded as failed, its
// attempt count.
func FailedWebhooks(r *Runtime, executionID string) ([]int, error) {
	rows, err := r.store.FailedNotifications(executionID)
	var attempts []int
	for _, n := range rows {
		attempts = append(attempts, n.Attempts)
	}
	return attempts, err
}

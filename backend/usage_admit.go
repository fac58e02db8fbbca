package backend

// admitBudget asks the budgets whether tenant may start an execution of providerID now.
func (r *Runtime) admitBudget(tenant, providerID string) error {
	b := r.opts.Budgets
	if b == nil {
		return nil
	}
	refusal, retryAfter, refused := b.Admit(tenant, providerID)
	if !refused {
		return nil
	}
	return &Error{Code: CodeBudgetExceeded, Message: refusal, RetryAfter: max(retryAfter, 1)}
}

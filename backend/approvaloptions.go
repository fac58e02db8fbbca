package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/harness-edge/harness-edge/backend/approvals"
	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ApprovalOptions configure approvals beyond the API (Options.Approvals; in Caddy the
// `action_timeout` and `action_rule` settings).
type ApprovalOptions struct {
	// Timeouts are how long an action of each provider may wait for an answer before it is
	// answered reject by the actor expiry, by provider id; the key "" is the default of the
	// providers not named. A start's actionTimeoutSeconds overrides it. Absent or zero: an
	// action waits as long as its execution does.
	Timeouts map[string]time.Duration
	// Rules are standing rules of the configuration (source config), each for the tenants it
	// names (none: every tenant). They cannot be revoked through the API.
	Rules []ConfiguredRule
	// ExpiryPoll bounds how long the expiry loop sleeps without being woken: on a store shared
	// by several nodes, how late another node's deadline may be noticed here if its own node
	// does not answer it. Default approvals.DefaultExpiryPoll.
	ExpiryPoll time.Duration
}

// ConfiguredRule is a standing rule of the configuration.
type ConfiguredRule struct {
	Tenants []string
	Rule    api.CreateActionRuleRequest
}

// MaxActionTimeout bounds an action's time to answer (configured or per start): an expiry
// years away is a mistake, not a policy.
const MaxActionTimeout = 30 * 24 * time.Hour

// configuredRules checks the configured rules and gives each its id: a digest of the rule and
// its tenants, the same at every start, so an answer that names it stays explained across
// restarts.
func (o ApprovalOptions) configuredRules(knownProvider func(string) bool, loaded api.Timestamp) ([]configuredRule, error) {
	for id, d := range o.Timeouts {
		if d < 0 || d > MaxActionTimeout {
			return nil, fmt.Errorf("action_timeout of provider %q is %v: it must be between 1s and %v", id, d, MaxActionTimeout)
		}
	}
	out := make([]configuredRule, 0, len(o.Rules))
	for i, c := range o.Rules {
		if err := approvals.CheckRule(c.Rule, knownProvider); err != nil {
			return nil, fmt.Errorf("action_rule %d: %v", i+1, err)
		}
		canonical, err := json.Marshal(struct { // encoding/json: fields in order, maps sorted
			Rule    api.CreateActionRuleRequest `json:"rule"`
			Tenants []string                    `json:"tenants"`
		}{c.Rule, c.Tenants})
		if err != nil {
			return nil, fmt.Errorf("action_rule %d: %v", i+1, err)
		}
		sum := sha256.Sum256(canonical)
		rule := api.ActionRule{
			ID: ruleIDPrefix + hex.EncodeToString(sum[:16]), Scope: api.ActionRuleScopeTenant,
			Match: c.Rule.Match, Decision: c.Rule.Decision, Message: c.Rule.Message,
			Source: api.ActionRuleSourceConfig, CreatedAt: loaded,
		}
		out = append(out, configuredRule{rule: rule, tenants: slices.Clone(c.Tenants)})
	}
	return out, nil
}

type configuredRule struct {
	rule    api.ActionRule
	tenants []string // none: every tenant
}

// forTenant is the configured rules that apply to tenant, as store records.
func configuredFor(rules []configuredRule, tenant string) []store.Rule {
	var out []store.Rule
	for _, c := range rules {
		if len(c.tenants) == 0 || slices.Contains(c.tenants, tenant) {
			out = append(out, store.Rule{ActionRule: c.rule, Tenant: tenant})
		}
	}
	return out
}

// timeoutFor is how long an action of providerID may wait, given the start's own setting (0:
// none); 0 when it may wait as long as its execution.
func (o ApprovalOptions) timeoutFor(providerID string, startMs int64) time.Duration {
	if startMs > 0 {
		return time.Duration(startMs) * time.Millisecond
	}
	if d, ok := o.Timeouts[providerID]; ok {
		return d
	}
	return o.Timeouts[""]
}

// checkActionTimeout refuses a start's actionTimeoutSeconds outside 1 s – MaxActionTimeout: an
// expiry in the past, or years away.
func checkActionTimeout(seconds *int) error {
	if seconds == nil || (*seconds >= 1 && time.Duration(*seconds)*time.Second <= MaxActionTimeout) {
		return nil
	}
	return validationError("Invalid execution request", &approvals.Invalid{Pointer: "/actionTimeoutSeconds",
		Reason: fmt.Sprintf("must be a whole number of seconds from 1 to %d (30 days)", int(MaxActionTimeout/time.Second))})
}

// withActionTimeout makes a start's actionTimeoutSeconds part of its idempotency fingerprint:
// the same key with another timeout is another request. Without one the fingerprint is the
// portable one, as earlier versions stored it.
func withActionTimeout(fingerprint string, seconds *int) string {
	if seconds == nil {
		return fingerprint
	}
	sum := sha256.Sum256([]byte(fingerprint + "\x00actionTimeoutSeconds=" + strconv.Itoa(*seconds)))
	return hex.EncodeToString(sum[:])
}

// msgInvalidAnswer is the reference's message for an answer of the wrong shape (§7.2); which
// member is wrong, and why, is in the details.
const msgInvalidAnswer = "Invalid action response"

// errInvalidAnswer is the VALIDATION_ERROR of an answer approvals.Check refused.
func errInvalidAnswer(err error) error {
	return validationError(msgInvalidAnswer, err)
}

// validationError is a VALIDATION_ERROR whose details name the member of the body (approvals'
// Invalid) in the shape of the HTTP binding's field errors (api.FieldError).
func validationError(message string, err error) error {
	var bad *approvals.Invalid
	if !errors.As(err, &bad) {
		return err
	}
	entry := map[string]any{"pointer": bad.Pointer, "reason": bad.Reason}
	if bad.Suggestion != "" {
		entry["suggestion"] = bad.Suggestion
	}
	return &Error{Code: CodeValidation, Message: message, Details: api.JSONObject{"errors": []any{entry}}}
}

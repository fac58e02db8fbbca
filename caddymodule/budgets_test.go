package caddymodule

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// Budgets in the Caddyfile: a good one adapts to the JSON the module reads; one that cannot be
// met (zero, negative, an unknown currency, no window) is refused with its line named, as
// `caddy validate` shows it; the JSON form is checked again at Validate.
func TestBudgetSettings(t *testing.T) {
	adapt := func(body string) (string, error) {
		out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n\tharness {\n"+body+"\n\t}\n}\n"), nil)
		return string(out), err
	}
	out, err := adapt(`		tenant {http.auth.user.id}
		budget alice {
			tokens 100000 per day
			cost 25.50 USD per month
			reserve 2000
			reserve 0.50 USD
			max_running 3
		}
		budget * acp {
			cost 5 EUR per day
			on_exceed finish
		}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"budgets":[{"cost":"25.50","cost_per":"month","currency":"USD","max_running":3,"reserve_cost":"0.50","reserve_tokens":2000,"tenant":"alice","tokens":100000,"tokens_per":"day"},` +
			`{"cost":"5","cost_per":"day","currency":"EUR","on_exceed":"finish","provider":"acp","tenant":"*"}]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("adapted JSON lacks %s:\n%s", want, out)
		}
	}

	for name, tc := range map[string]struct{ body, want string }{
		"zero tokens":       {"\t\tbudget alice {\n\t\t\ttokens 0 per day\n\t\t}", "Caddyfile:4"},
		"the budget's line": {"\t\tbudget alice {\n\t\t}", "Caddyfile:3"},
		"negative tokens":   {"\t\tbudget alice {\n\t\t\ttokens -5 per day\n\t\t}", "tokens must be a positive number"},
		"zero cost":         {"\t\tbudget alice {\n\t\t\tcost 0 USD per day\n\t\t}", "cost must be more than zero"},
		"negative cost":     {"\t\tbudget alice {\n\t\t\tcost -1 USD per day\n\t\t}", "is not a decimal"},
		"unknown currency":  {"\t\tbudget alice {\n\t\t\tcost 10 XYZ per month\n\t\t}", `currency "XYZ" is not an ISO 4217 code`},
		"lower case":        {"\t\tbudget alice {\n\t\t\tcost 10 usd per month\n\t\t}", "not an ISO 4217 code"},
		"too precise":       {"\t\tbudget alice {\n\t\t\tcost 0.0000001 USD per month\n\t\t}", "at most six fractional digits"},
		"no window":         {"\t\tbudget alice {\n\t\t\ttokens 10 per week\n\t\t}", "per day or per month"},
		"syntax":            {"\t\tbudget alice {\n\t\t\ttokens 10 daily\n\t\t}", "tokens <n> per day|month"},
		"nothing":           {"\t\tbudget alice {\n\t\t}", "sets neither tokens nor cost"},
		"unknown setting":   {"\t\tbudget alice {\n\t\t\ttokenz 5 per day\n\t\t}", `unknown budget setting "tokenz"`},
		"on_exceed":         {"\t\tbudget alice {\n\t\t\ttokens 5 per day\n\t\t\ton_exceed stop\n\t\t}", "on_exceed must be cancel or finish"},
		"no tenant":         {"\t\tbudget {\n\t\t\ttokens 5 per day\n\t\t}", "budget takes a tenant"},
		"reserve too much":  {"\t\tbudget alice {\n\t\t\ttokens 5 per day\n\t\t\treserve 6\n\t\t}", "reserve 6 tokens is more than the limit"},
		"reserve no limit":  {"\t\tbudget alice {\n\t\t\treserve 6\n\t\t}", "sets neither tokens nor cost"},
		"reserve currency":  {"\t\tbudget alice {\n\t\t\tcost 5 USD per day\n\t\t\treserve 1 EUR\n\t\t}", "in the same currency"},
		"reserve syntax":    {"\t\tbudget alice {\n\t\t\ttokens 5 per day\n\t\t\treserve\n\t\t}", "reserve <tokens> or reserve <amount> <currency>"},
		"provider running":  {"\t\tbudget alice acp {\n\t\t\tmax_running 2\n\t\t}", "max_running is a named tenant's own bound"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := adapt(tc.body)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Caddyfile:") {
				t.Fatalf("error %v, want one naming its line and containing %q", err, tc.want)
			}
		})
	}

	// The JSON config (the admin API, `caddy validate --config x.json`) is checked at Validate.
	for _, raw := range []string{
		`{"budgets":[{"tenant":"alice","tokens":-1,"tokens_per":"day"}]}`,
		`{"budgets":[{"tenant":"alice","cost":"1","currency":"ABC","cost_per":"day"}]}`,
		`{"budgets":[{"tenant":"alice","tokens":5,"tokens_per":"day"},{"tenant":"alice","cost":"1","currency":"USD","cost_per":"day"}]}`,
	} {
		var h Harness
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			t.Fatal(err)
		}
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "budgets[") {
			t.Errorf("%s: Validate = %v, want the budget named", raw, err)
		}
	}
}

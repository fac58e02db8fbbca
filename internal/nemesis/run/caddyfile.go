package run

import (
	"fmt"
	"strings"
)

// nodeCaddyfile is what a node serves: the harness over its store, with the settings the
// checker holds the run to (Settings states them once). Tenants come from a request header:
// the nemesis is the only caller, on loopback, and plays two tenants. The admin endpoint serves
// `caddy reload`; `caddy validate` reads this same file while the node serves it.
func nodeCaddyfile(n *node, s Settings) string {
	var store string
	if n.dsn == "" {
		store = fmt.Sprintf("data_dir %s", n.dataDir)
	} else {
		store = strings.Join([]string{
			"store postgres {",
			"\t\t\tdsn " + n.dsn,
			"\t\t\tlisten_dsn " + n.listenDSN,
			"\t\t\tnode " + n.name,
			"\t\t\tlease " + s.Lease.String(),
			"\t\t\ttimeout " + s.StoreTimeout.String(),
			"\t\t}",
		}, "\n")
	}
	return fmt.Sprintf(`{
	admin %s
	grace_period 2s
	servers {
		protocols h1 h2c
	}
}

http://127.0.0.1:%d {
	bind 127.0.0.1
	header X-Harness-Node %s
	harness {
		%s
		tenant {http.request.header.X-Tenant}
		max_running %d
		cancel_timeout %s
		budget %s {
			tokens %d per day
			on_exceed cancel
		}
		action_rule {
			tenants %s
			title "Approve mock execution"
			decision approve
			message "nemesis standing rule"
		}
		provider mock
	}
}
`, n.admin, n.port, n.name, store, s.MaxRunning, s.CancelTimeout, budgetTenant, s.BudgetTokens, ruleTenant)
}

// Package conformance checks a Harness Runtime API server over HTTP: any implementation, ours or
// another, given its base URL and a provider id.
//
// It ports the reference's conformance runner (docs/protocol.md §14): the same 17 checks over
// the same six scenarios (basic, approval, input, artifacts, denial, cancellation), each named as
// the reference names it and prefixed by its scenario ("approval/action-response-correlation").
// Then it runs the reference's HTTP-level acceptance cases (§14.1), named "http/…": exact
// statuses and Problem bodies for invalid bodies and cursors, CAPABILITY_UNSUPPORTED for
// extension.sandbox, idempotency over the network, SSE and JSON replay, invalid and duplicate
// action responses, a stream cut while an approval is pending.
//
// Normal calls go through the SDK (package sdk). Events are read from the raw SSE stream
// rather than through sdk.Client.Events, which repairs what it receives (drops duplicates,
// fills gaps from the JSON replay): a conformance suite must see what the server sent.
//
//	report, err := conformance.Run(ctx, conformance.Options{
//		BaseURL:    "http://127.0.0.1:4310",
//		ProviderID: "mock",
//		OnCheck:    func(c conformance.Check) { fmt.Println(c) },
//	})
//
// The scenarios' configs are the mock's (requireApproval, requestInput, artifactName, delayMs):
// they are how the reference makes the mock ask for approval or input. Against another provider
// the suite runs what that provider can be probed with portably — the basic scenario, the
// cancellation scenario when its manifest supports execution.cancel, and the HTTP cases that need
// no approval — and reports every other scenario as skipped, with the reason. Options.Scenarios
// replaces the scenario list for a provider that has its own way to be asked for approval.
//
// Every probe is bounded by Options.Timeout, and every execution the suite starts is cancelled
// at the end if it has not finished.
package conformance

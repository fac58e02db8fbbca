// Package mock is the deterministic provider of the reference (docs/protocol.md §11.2): it
// echoes its input in whitespace-delimited chunks, optionally asking for approval and input and
// emitting an artifact. Conformance and acceptance tests depend on its exact behaviour.
package mock

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/backend"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// ID is the mock's provider id.
const ID = "mock"

// Messages and titles of the reference mock.
const (
	approvalTitle       = "Approve mock execution"
	approvalDescription = "Synthetic approval used by the reference provider."
	inputTitle          = "Provide mock input"
	notApprovedMessage  = "Mock execution was not approved"
	declinedMessage     = "Mock input was declined"
	abortedMessage      = "Execution aborted"
	defaultPrefix       = "Echo: "
	defaultDelay        = 2 * time.Millisecond
)

type provider struct{}

// New returns the mock provider. It has no cancel hook.
func New() backend.Provider { return provider{} }

// Manifest is the mock's manifest of docs/protocol.md §10.4.
func (provider) Manifest() api.ProviderManifest {
	return api.ProviderManifest{
		ID:              ID,
		Name:            "Deterministic Mock Provider",
		Version:         "0.2.0",
		ProtocolVersion: api.ProviderManifestProtocolVersionN20260902,
		Topologies:      []api.RuntimeTopology{api.RuntimeTopologyEmbedded},
		Capabilities: map[string]api.SupportLevel{
			"action.approval":         api.SupportLevelNative,
			"action.input":            api.SupportLevelNative,
			"artifact.list":           api.SupportLevelEmulated,
			"execution.cancel":        api.SupportLevelNative,
			"conversation.continuity": api.SupportLevelEmulated,
			"event.replay":            api.SupportLevelNative,
			"event.streaming":         api.SupportLevelNative,
		},
	}
}

// What the mock does with each decision (docs/protocol.md, "Approvals"): approve goes on;
// reject fails the execution, with the answer's message after the reference's; {} and anything
// but approved:true deny, as in the reference. With config editableApproval the approval also
// offers edit, its arguments being {input}: an edit's input is echoed instead of the start's. An
// input is answered with a string value (respond, appended to the output) or declined (reject,
// which fails the execution with its message).
func (provider) Run(ctx context.Context, run *backend.Run) (backend.Result, error) {
	cfg := run.Config()
	input := run.Input()
	if cfg["requireApproval"] == true {
		description := approvalDescription
		ask := backend.ActionInput{
			Kind:        api.ActionKindApproval,
			Title:       approvalTitle,
			Description: &description,
			Payload:     api.JSONObject{},
		}
		if cfg["editableApproval"] == true {
			ask.Arguments = api.JSONObject{"input": input}
		}
		resp, err := run.RequestAction(ctx, ask)
		if err != nil {
			return backend.Result{}, err
		}
		if resp.Approved == nil || !*resp.Approved {
			return backend.Result{}, errors.New(withMessage(notApprovedMessage, resp))
		}
		if resp.Arguments != nil {
			if edited, ok := (*resp.Arguments)["input"].(string); ok {
				input = edited
			}
		}
	}
	suffix := ""
	if cfg["requestInput"] == true {
		resp, err := run.RequestAction(ctx, backend.ActionInput{Kind: api.ActionKindInput, Title: inputTitle})
		if err != nil {
			return backend.Result{}, err
		}
		if resp.Decision != nil && *resp.Decision == api.DecisionReject {
			return backend.Result{}, errors.New(withMessage(declinedMessage, resp))
		}
		if resp.Value != nil {
			if s, ok := (*resp.Value).(string); ok {
				suffix = " " + s
			}
		}
	}

	output := prefix(cfg) + input + suffix
	d := delay(cfg)
	step, reports := stepUsage(cfg)
	var steps int64
	var pace pacer
	defer pace.stop()
	for range repeat(cfg) {
		for _, chunk := range Chunks(output) {
			if err := pace.sleep(ctx, d); err != nil {
				return backend.Result{}, err
			}
			if err := run.EmitText(chunk); err != nil {
				return backend.Result{}, err
			}
			if steps++; reports {
				if err := run.ReportUsage(times(step, steps)); err != nil {
					return backend.Result{}, err
				}
			}
		}
	}
	if name, ok := cfg["artifactName"].(string); ok && name != "" {
		err := run.EmitArtifact(api.CreateArtifactInput{
			ID:        "artifact-" + run.ExecutionID(),
			Name:      name,
			MediaType: "text/plain",
		})
		if err != nil {
			return backend.Result{}, err
		}
	}
	return backend.Result{FinalOutput: output}, nil
}

func prefix(cfg api.JSONObject) string {
	if p, ok := cfg["prefix"].(string); ok {
		return p
	}
	return defaultPrefix
}

// delay is config delayMs when it is a finite number ≥ 0, else 2 ms.
func delay(cfg api.JSONObject) time.Duration {
	var ms float64
	switch v := cfg["delayMs"].(type) {
	case float64:
		ms = v
	case int:
		ms = float64(v)
	case int64:
		ms = float64(v)
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return defaultDelay
		}
		ms = f
	default:
		return defaultDelay
	}
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 {
		return defaultDelay
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// pacer sleeps between chunks on one timer, reused: a live execution streams a delta every
// few milliseconds for minutes, and a timer per delta was an allocation per event.
type pacer struct{ t *time.Timer }

// sleep waits d, or fails at once with "Execution aborted" when ctx ends.
func (p *pacer) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		if ctx.Err() != nil {
			return errors.New(abortedMessage)
		}
		return nil
	}
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d) // stopped or fired: since Go 1.23 no stale tick can be left in its channel
	}
	select {
	case <-p.t.C:
		return nil
	case <-ctx.Done():
		p.t.Stop()
		return errors.New(abortedMessage)
	}
}

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// Chunks splits output the way the reference mock does: each chunk is a maximal run of
// non-whitespace followed by its trailing whitespace; leading whitespace of the whole output is
// not emitted; an output with no non-whitespace is one chunk; an empty output none. Whitespace
// is JavaScript's \s.
func Chunks(output string) []string {
	if output == "" {
		return nil
	}
	if !utf8.ValidString(output) {
		// The reference's strings hold U+FFFD for each invalid byte ([]rune does the same).
		output = string([]rune(output))
	}
	start := spaceEnd(output, 0)
	if start == len(output) {
		return []string{output}
	}
	// Each chunk is a piece of output, and the slice is counted first: it is the only
	// allocation (a copy of each chunk was an allocation per live event).
	chunks := make([]string, 0, countWords(output[start:]))
	for i := start; i < len(output); {
		from := i
		for i < len(output) {
			r, size := utf8.DecodeRuneInString(output[i:])
			if isJSSpace(r) {
				break
			}
			i += size
		}
		i = spaceEnd(output, i)
		chunks = append(chunks, output[from:i])
	}
	return chunks
}

// spaceEnd is where the run of whitespace starting at s[i] ends (i itself when there is none).
func spaceEnd(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isJSSpace(r) {
			break
		}
		i += size
	}
	return i
}

// countWords counts the maximal runs of non-whitespace in s: Chunks' chunks.
func countWords(s string) int {
	n, inWord := 0, false
	for _, r := range s {
		space := isJSSpace(r)
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	return n
}

func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

// withMessage adds the answer's message, what a person told the agent, to the error.
func withMessage(text string, resp api.ActionResponse) string {
	if resp.Message != nil {
		return text + ": " + *resp.Message
	}
	return text
}

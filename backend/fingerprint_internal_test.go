package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// referenceFingerprint is requestFingerprint as it was before it wrote the document straight
// into a buffer: the canonical JSON of a map of the five members. Idempotency records store
// fingerprints, so the two must agree byte for byte or a retry after an upgrade would conflict.
// A busy policy other than parallel is a sixth member.
func referenceFingerprint(conversationID, providerID, input string, sortedCaps []string, config api.JSONObject, policy api.BusyPolicy) (string, error) {
	caps := make([]any, len(sortedCaps))
	for i, c := range sortedCaps {
		caps[i] = c
	}
	if config == nil {
		config = api.JSONObject{}
	}
	doc := map[string]any{
		"conversationId":       conversationID,
		"providerId":           providerID,
		"input":                input,
		"requiredCapabilities": caps,
		"config":               map[string]any(config),
	}
	if policy != "" && policy != api.BusyPolicyParallel {
		doc["busyPolicy"] = string(policy)
	}
	canonical, err := appendCanonicalJSON(nil, doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

func TestFingerprintIsTheCanonicalDocuments(t *testing.T) {
	for _, tc := range []struct {
		conv, provider, input string
		caps                  []string
		config                api.JSONObject
		policy                api.BusyPolicy
	}{
		{"conv_1", "mock", "hello runtime", nil, nil, ""},
		{"conv_1", "mock", "hello runtime", []string{}, api.JSONObject{"delayMs": 0.0}, api.BusyPolicyParallel},
		{"c", "p", "é\u2028\"\\\x01😀", []string{"a", "b\u00e9"}, api.JSONObject{"z": []any{1.5, nil, true, "x"}, "a": map[string]any{"k": 1e21}}, ""},
		{"conv_1", "mock", "hello runtime", nil, nil, api.BusyPolicyEnqueue},
		{"conv_1", "mock", "hello runtime", nil, api.JSONObject{"a": 1.0}, api.BusyPolicyInterrupt},
	} {
		got, err := requestFingerprint(tc.conv, tc.provider, tc.input, tc.caps, tc.config, tc.policy)
		want, wantErr := referenceFingerprint(tc.conv, tc.provider, tc.input, tc.caps, tc.config, tc.policy)
		if err != nil || wantErr != nil || got != want {
			t.Fatalf("fingerprint %q, %v; want %q, %v", got, err, want, wantErr)
		}
	}
}

func FuzzFingerprintMatchesTheReference(f *testing.F) {
	f.Add("conv_1", "mock", "hello runtime", "a", `{"delayMs":0}`)
	f.Add("", "", "\xff\u2028", "", `{"a":{"b":[1,2.5,-0,1e-7,"\u0000"]},"\u00e9":null}`)
	f.Fuzz(func(t *testing.T, conv, provider, input, capability, configJSON string) {
		policy := api.BusyPolicy(capability) // any string: the document must stay canonical
		var config api.JSONObject
		if json.Unmarshal([]byte(configJSON), &config) != nil {
			config = nil
		}
		caps := []string{capability}
		got, err := requestFingerprint(conv, provider, input, caps, config, policy)
		want, wantErr := referenceFingerprint(conv, provider, input, caps, config, policy)
		if got != want || (err == nil) != (wantErr == nil) {
			t.Fatalf("fingerprint %q, %v; want %q, %v", got, err, want, wantErr)
		}
	})
}

// TestFingerprintOfTheSDKsUsualStartIsPinned pins one fingerprint as idempotency records of
// earlier releases hold it (computed by referenceFingerprint, the code of those releases).
const pinnedFingerprint = "0def23edd94a44abdd105b9571c6fd27b9ef944c391787301b812c5d0b987a19"

func TestFingerprintOfTheSDKsUsualStartIsPinned(t *testing.T) {
	got, err := requestFingerprint("conv_ae91f8d5470c98725ef7f5725a515e15", "mock", "hello runtime", []string{}, api.JSONObject{"delayMs": 0.0}, api.BusyPolicyParallel)
	if want := pinnedFingerprint; err != nil || got != want {
		t.Fatalf("fingerprint %q, %v; want %q", got, err, want)
	}
	// The same start under a policy that queues is another request.
	if other, _ := requestFingerprint("conv_ae91f8d5470c98725ef7f5725a515e15", "mock", "hello runtime", []string{}, api.JSONObject{"delayMs": 0.0}, api.BusyPolicyEnqueue); other == got {
		t.Fatal("a start under enqueue has the fingerprint of the same start under parallel")
	}
}

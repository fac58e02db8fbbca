package backend

import (
	"slices"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// normalizeCapabilities de-duplicates and sorts the requested capabilities; never nil, because
// the Execution always carries the array.
func normalizeCapabilities(requested *[]string) []string {
	if requested == nil {
		return []string{}
	}
	caps := slices.Clone(*requested)
	slices.Sort(caps)
	return slices.Compact(caps)
}

// unsupportedCapabilities returns the sorted names that fail preflight (docs/protocol.md
// §10.1): absent from the manifest or declared unsupported. The manifest map is a real Go map,
// so names like "toString" fail instead of resolving to something inherited (§16 item 2).
func unsupportedCapabilities(m api.ProviderManifest, sortedCaps []string) []string {
	var failing []string
	for _, name := range sortedCaps {
		level, ok := m.Capabilities[name]
		if !ok || level == api.SupportLevelUnsupported {
			failing = append(failing, name)
		}
	}
	return failing
}

func errCapabilityUnsupported(providerID string, failing []string) *Error {
	names := make([]any, len(failing))
	for i, n := range failing {
		names[i] = n
	}
	e := newError(CodeCapabilityUnsupported, "Provider %s does not support required capabilities", providerID)
	e.Details = api.JSONObject{"providerId": providerID, "capabilities": names}
	return e
}

// validateManifest applies the ProviderManifest schema (docs/protocol.md §1.4).
func validateManifest(m api.ProviderManifest) error {
	invalid := func(why string) error {
		return newError(CodeValidation, "Invalid provider manifest %q: %s", m.ID, why)
	}
	switch {
	case m.ID == "":
		return invalid("id is required")
	case m.Name == "":
		return invalid("name is required")
	case m.Version == "":
		return invalid("version is required")
	case m.ProtocolVersion != api.ProviderManifestProtocolVersionN20260902:
		return invalid("protocolVersion must be " + ProtocolVersion)
	case len(m.Topologies) == 0:
		return invalid("topologies must not be empty")
	}
	for _, t := range m.Topologies {
		if !t.Valid() {
			return invalid("unknown topology " + string(t))
		}
	}
	for name, level := range m.Capabilities {
		if name == "" {
			return invalid("capability names must not be empty")
		}
		if !level.Valid() {
			return invalid("unknown support level " + string(level) + " for " + name)
		}
	}
	if m.Metadata != nil {
		if _, err := normalizeObject(*m.Metadata); err != nil {
			return invalid("metadata is not a JSON object")
		}
	}
	return nil
}

// cloneManifest deep-copies m so that nobody shares maps with a provider.
func cloneManifest(m api.ProviderManifest) api.ProviderManifest {
	out := m
	out.Topologies = slices.Clone(m.Topologies)
	out.Capabilities = make(map[string]api.SupportLevel, len(m.Capabilities))
	for k, v := range m.Capabilities {
		out.Capabilities[k] = v
	}
	if m.Metadata != nil {
		meta, err := normalizeObject(*m.Metadata)
		if err != nil {
			meta = deepCopyObject(*m.Metadata) // validateManifest reports it
		}
		out.Metadata = &meta
	}
	return out
}

// ProtocolVersion is the portable protocol version this runtime implements.
const ProtocolVersion = "2026-09-02"

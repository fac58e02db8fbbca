package backend

import (
	"encoding/json"
	"fmt"

	"github.com/harness-edge/harness-edge/sdk/api"
)

var errTooDeep = fmt.Errorf("JSON value nested more than %d levels deep", MaxJSONDepth)

// normalizeObject checks that m is a JSON object (finite numbers, encodable values, nested at
// most MaxJSONDepth levels) and returns its compact encoding together with a private copy made
// only of JSON types (map[string]any, []any, string, float64, bool, nil). A nil map is the empty object. The runtime keeps only such
// copies, so nothing a caller or provider does to its own map afterwards can change history.
func normalizeObject(m api.JSONObject) (api.JSONObject, []byte, error) {
	if m == nil {
		return api.JSONObject{}, []byte("{}"), nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, nil, fmt.Errorf("encode JSON object: %w", err)
	}
	if ExceedsJSONDepth(raw, MaxJSONDepth) {
		return nil, nil, errTooDeep
	}
	var out api.JSONObject
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("decode JSON object: %w", err)
	}
	if out == nil { // a typed nil map marshals as null
		return api.JSONObject{}, []byte("{}"), nil
	}
	return out, raw, nil
}

// deepCopyObject copies a map made of JSON types (see normalizeObject).
func deepCopyObject(m api.JSONObject) api.JSONObject {
	if m == nil {
		return nil
	}
	out := make(api.JSONObject, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return deepCopyObject(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyValue(e)
		}
		return out
	default:
		return v // string, float64, bool, nil, json.Number: immutable
	}
}

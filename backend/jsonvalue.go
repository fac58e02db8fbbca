package backend

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/harness-edge/harness-edge/sdk/api"
)

var errTooDeep = fmt.Errorf("JSON value nested more than %d levels deep", MaxJSONDepth)

// normalizeObject checks that m is a JSON object (finite numbers, encodable values, nested at
// most MaxJSONDepth levels) and returns a private copy made only of JSON types
// (map[string]any, []any, string, float64, bool, nil). A nil map is the empty object. The
// runtime keeps only such copies, so nothing a caller or provider does to its own map afterwards
// can change history.
//
// The copy is what a JSON round trip (Marshal, then Unmarshal) gives. A map already made only of
// values such a round trip returns unchanged — what the HTTP layer decodes, every start's config —
// is deep-copied instead of encoded and decoded (jsonRoundTripStable); anything else (other Go
// types, json.Number, invalid UTF-8, nil slices, non-finite numbers, too deep) takes the round
// trip, which also reports what is not JSON.
func normalizeObject(m api.JSONObject) (api.JSONObject, error) {
	if m == nil {
		return api.JSONObject{}, nil
	}
	if jsonRoundTripStable(m, 0) {
		return deepCopyObject(m), nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode JSON object: %w", err)
	}
	if ExceedsJSONDepth(raw, MaxJSONDepth) {
		return nil, errTooDeep
	}
	var out api.JSONObject
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode JSON object: %w", err)
	}
	if out == nil { // a typed nil map marshals as null
		return api.JSONObject{}, nil
	}
	return out, nil
}

// jsonRoundTripStable reports whether v, at nesting level depth, comes back equal from
// json.Marshal then json.Unmarshal into any, nested at most MaxJSONDepth levels: only the types
// Unmarshal produces, finite numbers, valid UTF-8 strings and keys, no nil map or slice (those
// come back as nil).
func jsonRoundTripStable(v any, depth int) bool {
	switch v := v.(type) {
	case nil, bool:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case string:
		return utf8.ValidString(v)
	case map[string]any:
		if v == nil || depth+1 > MaxJSONDepth {
			return false
		}
		for k, e := range v {
			if !utf8.ValidString(k) || !jsonRoundTripStable(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if v == nil || depth+1 > MaxJSONDepth {
			return false
		}
		for _, e := range v {
			if !jsonRoundTripStable(e, depth+1) {
				return false
			}
		}
		return true
	default:
		return false
	}
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

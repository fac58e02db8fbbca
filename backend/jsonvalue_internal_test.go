package backend

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// roundTrip is what normalizeObject returned before its deep-copy path: a JSON round trip.
func roundTrip(m api.JSONObject) (api.JSONObject, error) {
	if m == nil {
		return api.JSONObject{}, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if ExceedsJSONDepth(raw, MaxJSONDepth) {
		return nil, errTooDeep
	}
	var out api.JSONObject
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if out == nil {
		return api.JSONObject{}, nil
	}
	return out, nil
}

func nested(levels int) api.JSONObject {
	m := api.JSONObject{"leaf": 1.0}
	for range levels - 1 {
		m = api.JSONObject{"a": m}
	}
	return m
}

func TestNormalizeObjectIsTheJSONRoundTrip(t *testing.T) {
	for _, m := range []api.JSONObject{
		nil, {}, {"delayMs": 0.0}, {"a": []any{1.5, nil, true, "x", map[string]any{}}, "b": -0.0, "\u2028": "<&>"},
		{"bad": "\xff"}, {"\xfe": 1.0}, {"n": json.Number("1.50")}, {"i": 3, "u": uint8(4), "s": []string{"a"}},
		{"nilSlice": []any(nil)}, {"nilMap": map[string]any(nil)}, {"typed": api.JSONObject{"k": "v"}},
		nested(MaxJSONDepth), nested(MaxJSONDepth + 1),
		{"nan": math.NaN()}, {"inf": math.Inf(1)}, {"ch": make(chan int)},
	} {
		got, err := normalizeObject(m)
		want, wantErr := roundTrip(m)
		if (err == nil) != (wantErr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("normalizeObject(%v) = %#v, %v; the round trip gives %#v, %v", m, got, err, want, wantErr)
		}
	}
	// The copy is private: changing the caller's map afterwards changes nothing kept.
	in := api.JSONObject{"list": []any{"a"}, "obj": map[string]any{"k": "v"}}
	kept, err := normalizeObject(in)
	if err != nil {
		t.Fatal(err)
	}
	in["list"].([]any)[0] = "changed"
	in["obj"].(map[string]any)["k"] = "changed"
	if !reflect.DeepEqual(kept, api.JSONObject{"list": []any{"a"}, "obj": map[string]any{"k": "v"}}) {
		t.Fatalf("the normalized copy shares the caller's values: %v", kept)
	}
}

func FuzzNormalizeObjectIsTheJSONRoundTrip(f *testing.F) {
	f.Add(`{"delayMs":0,"a":[1,{"b":null}],"c":"\u00e9"}`)
	f.Add(`{"a":"\ud800"}`)
	f.Add(strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70))
	f.Fuzz(func(t *testing.T, raw string) {
		var m api.JSONObject
		if json.Unmarshal([]byte(raw), &m) != nil {
			return
		}
		got, err := normalizeObject(m)
		want, wantErr := roundTrip(m)
		if (err == nil) != (wantErr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("normalizeObject = %#v, %v; the round trip gives %#v, %v", got, err, want, wantErr)
		}
	})
}

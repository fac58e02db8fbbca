package proxy

import "testing"

func TestParseCursor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true},
		{"0", 0, true},
		{"7", 7, true},
		{"007", 7, true},
		{"9007199254740991", 9007199254740991, true},
		{"9007199254740992", 0, false}, // 2^53 (reference test)
		{"99999999999999999999999", 0, false},
		{"-1", 0, false},           // reference test
		{"1.5", 0, false},          // reference test
		{"not-a-number", 0, false}, // reference test
		// Accepted by the reference's Number(), rejected by our strict syntax.
		{" 5", 0, false},
		{"5 ", 0, false},
		{"+5", 0, false},
		{"5.0", 0, false},
		{"1e2", 0, false},
		{"0x10", 0, false},
		{"-0", 0, false},
		{"٣", 0, false}, // a non-ASCII digit
	} {
		got, ok := parseCursor(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCursor(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"1", 1, true},
		{"100", 100, true},
		{"0", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"1.0", 0, false},
		{"99999999999999999999999999", int(^uint(0) >> 1), true},
	} {
		got, ok := parseLimit(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseLimit(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestQueryParam(t *testing.T) {
	for _, tc := range []struct {
		raw, value     string
		present, valid bool
	}{
		{"", "", false, true},
		{"after=5", "5", true, true},
		{"x=1&after=5&after=6", "5", true, true}, // the first wins, as in the reference
		{"after=", "", true, true},
		{"after", "", true, true},
		{"aft%65r=3", "3", true, true},
		{"after=%35", "5", true, true},
		{"after=%zz", "", true, false},
		{"after=1+2", "1 2", true, true},
		{"x=%zz&after=2", "2", true, true},
	} {
		value, present, valid := queryParam(tc.raw, "after")
		if value != tc.value || present != tc.present || valid != tc.valid {
			t.Errorf("queryParam(%q) = %q, %v, %v; want %q, %v, %v",
				tc.raw, value, present, valid, tc.value, tc.present, tc.valid)
		}
	}
}

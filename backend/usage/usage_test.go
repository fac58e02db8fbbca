package usage

import (
	"math"
	"strings"
	"testing"
)

func TestAmounts(t *testing.T) {
	for _, c := range []struct {
		in     string
		micros int64
		ok     bool
	}{
		{"0", 0, true}, {"12", 12_000_000, true}, {"0.0123", 12_300, true}, {"25.50", 25_500_000, true},
		{"0.000001", 1, true}, {"9007199254", 9_007_199_254_000_000, true},
		{"", 0, false}, {"-1", 0, false}, {"1.", 0, false}, {".5", 0, false}, {"0.0000001", 0, false},
		{"1e3", 0, false}, {"1,5", 0, false}, {" 1", 0, false}, {"9007199255", 0, false}, {"99999999999999999999", 0, false},
	} {
		m, err := ParseAmount(c.in)
		if (err == nil) != c.ok || (c.ok && m != c.micros) {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d, ok %v", c.in, m, err, c.micros, c.ok)
		}
		if c.ok {
			if back, _ := ParseAmount(FormatMicros(m)); back != m {
				t.Errorf("FormatMicros(%d) = %q does not read back", m, FormatMicros(m))
			}
		}
	}
	for _, c := range []struct {
		in     float64
		micros int64
		ok     bool
	}{{0.0125, 12_500, true}, {0.1 + 0.2, 300_000, true}, {-0.01, 0, false}, {math.NaN(), 0, false}, {math.Inf(1), 0, false}, {1e10, 0, false}} {
		m, err := MicrosFromFloat(c.in)
		if (err == nil) != c.ok || (c.ok && m != c.micros) {
			t.Errorf("MicrosFromFloat(%v) = %d, %v; want %d, ok %v", c.in, m, err, c.micros, c.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		u    Usage
		want string // "" accepted, else a part of the refusal
	}{
		{Usage{InputTokens: 5, Cost: Money{Micros: 10, Currency: "EUR"}}, ""},
		{Usage{InputTokens: -1}, "negative"},
		{Usage{OutputTokens: MaxCount + 1}, "beyond 2^53"},
		{Usage{Cost: Money{Micros: 1}}, "no currency"},
		{Usage{Cost: Money{Micros: 1, Currency: "XYZ"}}, "not an ISO 4217 code"},
		{Usage{Cost: Money{Micros: 1, Currency: "usd"}}, "three upper-case letters"},
	} {
		err := Check(c.u)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%+v) = %v, want %q", c.u, err, c.want)
		}
	}
	if err := CheckGrowth(Usage{InputTokens: 5}, Usage{InputTokens: 4}); err == nil {
		t.Error("a count that goes down was accepted")
	}
	if err := CheckGrowth(Usage{Cost: Money{1, "USD"}}, Usage{Cost: Money{2, "EUR"}}); err == nil {
		t.Error("a cost that changes currency was accepted")
	}
	var tot Totals
	tot.Add(Usage{TotalTokens: math.MaxInt64 - 1}, 1)
	tot.Add(Usage{TotalTokens: MaxCount}, 1)
	if tot.TotalTokens != math.MaxInt64 {
		t.Errorf("sums wrap instead of saturating: %d", tot.TotalTokens)
	}
}

// FuzzParseAmount: whatever a provider or a Caddyfile sends, ParseAmount never panics, and what
// it accepts is non-negative, within MaxCount, and written back to the same value.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"0", "0.0123", "25.50", "-1", "1e3", "9007199254.740991", "0.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseAmount(s)
		if err != nil {
			return
		}
		if m < 0 || m > MaxCount {
			t.Fatalf("ParseAmount(%q) = %d", s, m)
		}
		if back, err := ParseAmount(FormatMicros(m)); err != nil || back != m {
			t.Fatalf("ParseAmount(%q) = %d, written %q, read back %d, %v", s, m, FormatMicros(m), back, err)
		}
	})
}

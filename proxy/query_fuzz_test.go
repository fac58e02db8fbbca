package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckQuery: whatever the raw query, the route table's check never panics, and what it
// lets through takes only the route's names, no NUL, empty values only where the route defines
// them and repeats only of repeatable parameters (the listing's table, the richest). A refusal is
// a well-formed 400 naming one parameter.
func FuzzCheckQuery(f *testing.F) {
	for _, s := range []string{
		"", "state=running&state=queued,failed", "state=&after=&limit=5", "foo=1", "limit=",
		"limit=1&limit=2", "after=%00", "st%61te=x", "%zz=1", "after=%zz", "&&", "=", "a=1;b=2",
		"state=a%00b", "%00=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := checkQuery(raw, listingParams)
		if err != nil {
			p, expected := problemOf(err)
			if !expected || p.status != http.StatusBadRequest || p.body.Code != "VALIDATION_ERROR" || p.body.Message == "" {
				t.Fatalf("%q: %v became %d %+v", raw, err, p.status, p.body)
			}
			body, merr := json.Marshal(p.body)
			if merr != nil {
				t.Fatal(merr)
			}
			requireFieldDetails(t, body)
			return
		}
		counts := map[string]int{}
		for _, pair := range strings.Split(raw, "&") {
			if pair == "" {
				continue
			}
			k, v, _ := strings.Cut(pair, "=")
			key, kerr := url.QueryUnescape(k)
			if kerr != nil {
				t.Fatalf("accepted %q: key %q cannot be unescaped", raw, k)
			}
			p, ok := paramNamed(listingParams, key)
			if !ok {
				t.Fatalf("accepted %q: unknown %q", raw, key)
			}
			value, verr := url.QueryUnescape(v)
			if verr != nil {
				continue // left to the route's parser
			}
			if strings.Contains(value, "\x00") || (value == "" && !p.empty) {
				t.Fatalf("accepted %q: value %q of %s", raw, value, key)
			}
			if counts[key]++; counts[key] > 1 && !p.repeatable {
				t.Fatalf("accepted %q: %s repeated", raw, key)
			}
		}
	})
}

// FuzzFirstDuplicateMatchesTheTokenWalk: on any valid UTF-8 JSON the scanner's duplicate check
// and the reference's (encoding/json's tokens) find the same first repetition, or none.
func FuzzFirstDuplicateMatchesTheTokenWalk(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2},"a":3}`, `[{"x":1},{"x":1,"x":2}]`,
		`{"a":1,"\u0061":2}`, `{"a~/":[{"":1,"":2}]}`, `{"k":[[],[{"a":0}],{"b":1,"c":{"b":1}}]}`,
		`{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9,"10":1,"11":1,"12":1,"13":1,"14":1,"15":1,"16":1,"17":1,"18":1,"3":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || !utf8.Valid(body) {
			return
		}
		got, gotDup := firstDuplicate(body)
		want, wantDup := refFirstDuplicate(body)
		if got != want || gotDup != wantDup {
			t.Fatalf("%q: scanner %q %v, token walk %q %v", body, got, gotDup, want, wantDup)
		}
	})
}

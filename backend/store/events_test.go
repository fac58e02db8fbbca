package store

import (
	"bytes"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// storedDelta is an event as the runtime's encoder writes it (backend/events.go).
func storedDelta(seq string, text string) []byte {
	return []byte(`{"data":{"text":"` + text + `"},"executionId":"exec_0123456789abcdef0123456789abcdef",` +
		`"id":"exec_0123456789abcdef0123456789abcdef:` + seq + `","sequence":` + seq +
		`,"time":"2026-11-29T19:50:06.123Z","type":"output.text.delta"}`)
}

// The checksum is CRC-32C of the type and the JSON, XOR the sequence's low 32 bits
// (docs/storage.md), whether the type comes as a string (a write) or as stored bytes (a read),
// a known type or not.
func TestEventChecksumIsCRC32COfTypeAndJSONXORSequence(t *testing.T) {
	raw := storedDelta("42", "hello")
	tab := crc32.MakeTable(crc32.Castagnoli)
	for _, typ := range []string{"output.text.delta", "", "no.such.type"} {
		want := crc32.Checksum(append([]byte(typ), raw...), tab) ^ 42
		if got := EventChecksum(42, typ, raw); got != want {
			t.Fatalf("EventChecksum(%q) = %08x, want %08x", typ, got, want)
		}
		if got := EventChecksum(42, []byte(typ), raw); got != want {
			t.Fatalf("EventChecksum of the stored type %q = %08x, want %08x", typ, got, want)
		}
	}
	if EventChecksum(1<<32+42, "output.text.delta", raw) != EventChecksum(42, "output.text.delta", raw) {
		t.Fatal("the sequence's high bits are not meant to be in the checksum")
	}
}

// Issue 34: a stored event with one byte changed in its middle (`"` → `X`, the value still a
// `{…}`) was served as invalid JSON. Every single-byte change anywhere in the value, in its
// type or its sequence is now refused with ErrUndecodable; the value as written passes.
func TestEventOfRefusesEveryDamagedByte(t *testing.T) {
	typ := []byte(api.StandardEventTypeOutputTextDelta)
	good := storedDelta("42", "hello \"wörld\"")
	sum := EventChecksum(42, typ, good)
	if e, err := EventOf(42, typ, good, sum); err != nil || e.Sequence != 42 || e.Type != api.StandardEventTypeOutputTextDelta || !bytes.Equal(e.JSON, good) {
		t.Fatalf("the value as written: %+v, %v", e, err)
	}
	for i := range good {
		for _, b := range []byte{'X', good[i] ^ 0x01, good[i] ^ 0x80, 0} {
			if b == good[i] {
				continue
			}
			d := bytes.Clone(good)
			d[i] = b
			if e, err := EventOf(42, typ, d, sum); !errors.Is(err, ErrUndecodable) {
				t.Fatalf("byte %d changed to %q: %s served (%v); want ErrUndecodable", i, b, e.JSON, err)
			}
		}
	}
	damaged := map[string]struct {
		seq int64
		typ []byte
		raw []byte
	}{
		"truncated":                   {42, typ, good[:len(good)-30]},
		"one byte longer":             {42, typ, append(bytes.Clone(good), ' ')},
		"empty":                       {42, typ, nil},
		"zeroed":                      {42, typ, make([]byte, len(good))},
		"under another sequence":      {41, typ, good},
		"type damaged":                {42, []byte("output.text.dalta"), good},
		"type changed to a known one": {42, []byte(api.StandardEventTypeOutputTextDone), good},
	}
	for name, d := range damaged {
		if e, err := EventOf(d.seq, d.typ, d.raw, sum); !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: %+v, %v; want ErrUndecodable", name, e, err)
		}
	}
	if _, err := EventOf(42, typ, good, sum^1<<31); !errors.Is(err, ErrUndecodable) {
		t.Errorf("checksum damaged: %v; want ErrUndecodable", err)
	}
}

// LegacyEvent (the migrations' one-time check of events stored before checksums) accepts what
// the runtime's encoder and older writers wrote, in any field order, and refuses what the
// stores' reads used to serve: a byte damaged in the middle, invalid UTF-8, another sequence,
// a type beside the JSON that is not the one in it.
func TestLegacyEventChecksEveryByte(t *testing.T) {
	typ := []byte(api.StandardEventTypeOutputTextDelta)
	good := storedDelta("42", "héllo")
	other := []byte(`{"type":"run.queued","sequence":7,"executionId":"exec_x","id":"exec_x:7","time":"2026-11-29T19:50:06.123Z","data":{}}`)
	for name, c := range map[string]struct {
		seq     int64
		typ     []byte
		hasType bool
		raw     []byte
		want    api.StandardEventType
	}{
		"encoder's output":              {42, typ, true, good, api.StandardEventTypeOutputTextDelta},
		"without a type beside it":      {42, nil, false, good, api.StandardEventTypeOutputTextDelta},
		"another field order":           {7, []byte("run.queued"), true, other, api.StandardEventTypeRunQueued},
		"another order, no stored type": {7, nil, false, other, api.StandardEventTypeRunQueued},
	} {
		if e, err := LegacyEvent(c.seq, c.typ, c.hasType, c.raw); err != nil || e.Type != c.want || e.Sequence != c.seq || !bytes.Equal(e.JSON, c.raw) {
			t.Errorf("%s: %+v, %v", name, e, err)
		}
	}
	middle := bytes.Index(good, []byte(`"},`)) // the quote that ends the text
	for name, c := range map[string]struct {
		seq     int64
		typ     []byte
		hasType bool
		raw     []byte
	}{
		"quote in the middle changed": {42, typ, true, append(append(bytes.Clone(good[:middle]), 'X'), good[middle+1:]...)},
		"invalid UTF-8 in a string":   {42, typ, true, bytes.Replace(good, []byte("é"), []byte{0xff}, 1)},
		"under another sequence":      {41, typ, true, good},
		"another type beside it":      {42, []byte("output.text.done"), true, good},
		"an empty type beside it":     {42, nil, true, good},
		"not an object":               {42, nil, false, []byte(`[1]`)},
		"no sequence":                 {42, nil, false, []byte(`{"type":"run.queued"}`)},
		"unknown type":                {42, nil, false, []byte(`{"sequence":42,"type":"run.later"}`)},
		"truncated":                   {42, typ, true, good[:len(good)-1]},
	} {
		if e, err := LegacyEvent(c.seq, c.typ, c.hasType, c.raw); !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: %+v, %v; want ErrUndecodable", name, e, err)
		}
	}
}

// BenchmarkEventOf is the per-event cost of every store read of an event (`go test -run '^$'
// -bench EventOf ./backend/store/`): a text delta of a few words and one of 16 KiB.
func BenchmarkEventOf(b *testing.B) {
	for _, size := range []struct {
		name string
		text string
	}{{"small", "hello runtime"}, {"16KiB", strings.Repeat("w", 16<<10)}} {
		raw := storedDelta("42", size.text)
		typ := []byte(api.StandardEventTypeOutputTextDelta)
		sum := EventChecksum(42, typ, raw)
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EventOf(42, typ, raw, sum); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLegacyEvent is the migrations' per-event cost of the one-time check of an event
// stored before checksums (`go test -run '^$' -bench LegacyEvent ./backend/store/`).
func BenchmarkLegacyEvent(b *testing.B) {
	for _, size := range []struct {
		name string
		text string
	}{{"small", "hello runtime"}, {"16KiB", strings.Repeat("w", 16<<10)}} {
		raw := storedDelta("42", size.text)
		typ := []byte(api.StandardEventTypeOutputTextDelta)
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LegacyEvent(42, typ, true, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

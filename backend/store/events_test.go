package store

import (
	"bytes"
	"errors"
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

// A stored event whose ends were damaged (a byte changed, a truncation) is refused with
// ErrUndecodable instead of being served as invalid JSON, and so is one stored under another
// sequence's key; the encoder's own output passes.
func TestEventFromStoredRefusesDamagedValues(t *testing.T) {
	good := storedDelta("42", "hello")
	if e, err := EventFromStored(42, good); err != nil || e.Sequence != 42 || e.Type != api.StandardEventTypeOutputTextDelta || !bytes.Equal(e.JSON, good) {
		t.Fatalf("the encoder's output: %+v, %v", e, err)
	}
	at := func(i int, b byte) []byte {
		d := bytes.Clone(good)
		if i < 0 {
			i += len(d)
		}
		d[i] = b
		return d
	}
	damaged := map[string][]byte{
		"first byte changed":          at(0, 'x'),
		"data object's brace changed": at(len(`{"data":`), '['),
		"last byte changed":           at(-1, ']'),
		"type's quote changed":        at(-2, 'x'),
		"type changed":                bytes.Replace(good, []byte("output.text.delta"), []byte("output.text.dalta"), 1),
		"sequence changed":            bytes.Replace(good, []byte(`"sequence":42`), []byte(`"sequence":43`), 1),
		"sequence's digit damaged":    bytes.Replace(good, []byte(`"sequence":42`), []byte(`"sequence":4x`), 1),
		"truncated":                   good[:len(good)-30],
		"empty":                       {},
		"zeroed":                      make([]byte, len(good)),
	}
	for name, raw := range damaged {
		if e, err := EventFromStored(42, raw); !errors.Is(err, ErrUndecodable) {
			t.Errorf("%s: %+v, %v; want ErrUndecodable", name, e, err)
		}
	}
	if _, err := EventFromStored(41, good); !errors.Is(err, ErrUndecodable) {
		t.Errorf("stored under key 41: %v; want ErrUndecodable", err)
	}
	for _, seq := range []string{"1", "10", "9007199254740993"} {
		raw := storedDelta(seq, "x")
		want := int64(0)
		for _, c := range seq {
			want = want*10 + int64(c-'0')
		}
		if e, err := EventFromStored(want, raw); err != nil || e.Sequence != want {
			t.Errorf("sequence %s: %+v, %v", seq, e, err)
		}
	}
}

// BenchmarkEventFromStored is the per-event cost of every store read of an event (`go test
// -run '^$' -bench EventFromStored ./backend/store/`): a text delta of a few words and one of
// 16 KiB.
func BenchmarkEventFromStored(b *testing.B) {
	for _, size := range []struct {
		name string
		text string
	}{{"small", "hello runtime"}, {"16KiB", strings.Repeat("w", 16<<10)}} {
		raw := storedDelta("42", size.text)
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EventFromStored(42, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package postgres

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// The batch inserts send one array per column with an element per row (per event, for the
// events and the stream log): encoding one must cost the same allocations whatever its length,
// not one boxed element per row (docs/performance-log.md, "PostgreSQL: allocations per event").
func TestArrayArgumentsEncodeWithoutAllocatingPerElement(t *testing.T) {
	m := pgtype.NewMap()
	cases := []struct {
		name string
		oid  uint32
		of   func(n int) (plain, typed any)
	}{
		{"text[]", pgtype.TextArrayOID, func(n int) (any, any) {
			s := make([]string, n)
			for i := range s {
				s[i] = fmt.Sprintf("exec_%032x", i)
			}
			return s, textArray(s)
		}},
		{"int8[]", pgtype.Int8ArrayOID, func(n int) (any, any) {
			s := make([]int64, n)
			for i := range s {
				s[i] = int64(i) << 20 // past the small integers Go boxes without allocating
			}
			return s, int8Array(s)
		}},
		{"int4[]", pgtype.Int4ArrayOID, func(n int) (any, any) {
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(i) << 20
			}
			return s, int4Array(s)
		}},
		{"bytea[]", pgtype.ByteaArrayOID, func(n int) (any, any) {
			s := make([][]byte, n)
			for i := range s {
				s[i] = []byte(`{"type":"output.text.delta"}`)
			}
			return s, byteaArray(s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allocs := func(v any) float64 {
				buf := make([]byte, 0, 1<<16)
				return testing.AllocsPerRun(20, func() {
					var err error
					if buf, err = m.Encode(c.oid, pgtype.BinaryFormatCode, v, buf[:0]); err != nil {
						t.Fatal(err)
					}
				})
			}
			// The bytes sent are those pgx makes of the plain slice.
			plain, typed := c.of(3)
			want, err := m.Encode(c.oid, pgtype.BinaryFormatCode, plain, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := m.Encode(c.oid, pgtype.BinaryFormatCode, typed, nil); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("encoded %x, %v; the plain slice %x", got, err, want)
			}
			_, one := c.of(1)
			_, hundred := c.of(100)
			many, single := allocs(hundred), allocs(one)
			if many != single {
				t.Errorf("encoding 100 elements took %.0f allocations, 1 element %.0f: the elements are boxed one by one", many, single)
			}
		})
	}
}

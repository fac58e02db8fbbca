package postgres

import "github.com/jackc/pgx/v5/pgtype"

// The batch inserts send one array per column, an element per row: per event for the events
// and the stream log. Given a plain slice, pgx wraps it in pgtype.FlatArray, whose Index
// returns each element as an `any`: a string, a []byte or an int64 past 255 put in an
// interface is one allocation per element (about 7 per live event, docs/performance-log.md).
// The arrays here are pgx's pgtype.ArrayGetter over the same slices, whose Index returns a
// pointer to the element instead: a pointer fits in an interface without an allocation, and
// the pointer types implement pgx's valuer interfaces (TextValuer, Int64Valuer, BytesValuer),
// which the text, int4/int8 and bytea codecs encode from directly. Same wire format (binary
// arrays, as for the slices).

// registerArrays tells a connection's type map the PostgreSQL type of each array, for where
// pgx does not learn a parameter's type from a prepared statement (default_query_exec_mode
// exec or simple_protocol, as a transaction-mode pooler needs) and looks it up by Go type.
func registerArrays(m *pgtype.Map) {
	m.RegisterDefaultPgType(textArray(nil), "_text")
	m.RegisterDefaultPgType(int8Array(nil), "_int8")
	m.RegisterDefaultPgType(int4Array(nil), "_int4")
	m.RegisterDefaultPgType(byteaArray(nil), "_bytea")
}

// textArray is a []string sent as text[].
type textArray []string

func (a textArray) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a textArray) Index(i int) any                     { return (*textElement)(&a[i]) }
func (a textArray) IndexType() any                      { return new(textElement) }

type textElement string

func (e *textElement) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

// int8Array is a []int64 sent as int8[].
type int8Array []int64

func (a int8Array) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a int8Array) Index(i int) any                     { return (*intElement)(&a[i]) }
func (a int8Array) IndexType() any                      { return new(intElement) }

type intElement int64

func (e *intElement) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

// int4Array is a []int32 sent as int4[].
type int4Array []int32

func (a int4Array) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a int4Array) Index(i int) any                     { return (*int4Element)(&a[i]) }
func (a int4Array) IndexType() any                      { return new(int4Element) }

type int4Element int32

func (e *int4Element) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

// byteaArray is a [][]byte sent as bytea[]; a nil element is NULL, as in pgx's own encoding.
type byteaArray [][]byte

func (a byteaArray) Dimensions() []pgtype.ArrayDimension { return dimensions(len(a), a == nil) }
func (a byteaArray) Index(i int) any                     { return (*byteaElement)(&a[i]) }
func (a byteaArray) IndexType() any                      { return new(byteaElement) }

type byteaElement []byte

func (e *byteaElement) BytesValue() ([]byte, error) { return *e, nil }

// dimensions is a one-dimensional array's of n elements, nil (a NULL array) for a nil slice,
// as pgtype.FlatArray has it.
func dimensions(n int, null bool) []pgtype.ArrayDimension {
	if null {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

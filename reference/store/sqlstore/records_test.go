package sqlstore_test

import (
	"strings"
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlstore"
)

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		from, n int
		want    string
	}{
		{1, 0, ""},
		{1, 1, "$1"},
		{1, 3, "$1, $2, $3"},
		{9, 3, "$9, $10, $11"},
	}
	for _, tc := range tests {
		if got := sqlstore.Placeholders(tc.from, tc.n); got != tc.want {
			t.Errorf("Placeholders(%d, %d) = %q, want %q", tc.from, tc.n, got, tc.want)
		}
	}
}

// The insert statements have a placeholder per listed column; a column
// added to a list and not to its values (or the other way round) must fail
// here, not as a store's error at run time.
func TestColumnsMatchValues(t *testing.T) {
	d := sqlstore.Dialect{Verbatim: func(b []byte) any { return b }}
	tests := []struct {
		name   string
		cols   string
		values []any
	}{
		{"records", sqlstore.RecordCols, d.RecordValues(store.Record{})},
		{"permits", sqlstore.PermitCols, sqlstore.PermitValues(store.Permit{})},
	}
	for _, tc := range tests {
		if n := len(strings.Split(tc.cols, ",")); n != len(tc.values) {
			t.Errorf("%s: %d columns, %d values", tc.name, n, len(tc.values))
		}
	}
}

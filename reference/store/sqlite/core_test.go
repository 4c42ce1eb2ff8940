package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
)

// The shared core writes JSON columns as strings, as PostgreSQL's jsonb
// wants them: bytes would be kept by SQLite as a BLOB, which its text
// comparisons and JSON functions treat apart from the same text.
func TestJSONColumnsAreText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.db")
	s := open(t, path, 0)
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPrincipal(ctx, store.Principal{ID: "p-1", Provider: "idp", Issuer: "iss", Subject: "sub", Tools: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTool(ctx, store.Tool{Name: "t-1", Overrides: json.RawMessage(`{"title":"T"}`)}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`SELECT typeof(tools) FROM principals WHERE id = 'p-1'`,
		`SELECT typeof(overrides) FROM tools WHERE name = 't-1'`,
	} {
		var typ string
		if err := db.QueryRowContext(ctx, q).Scan(&typ); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if typ != "text" {
			t.Errorf("%s = %s, want text", q, typ)
		}
	}
}

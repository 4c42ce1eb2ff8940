package sqlstore

import (
	"io/fs"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	d := Dialect{Types: ColumnTypes{Int64: "BIGINT", Bool: "BOOLEAN"}}
	tests := []struct {
		name, body, want, err string
	}{
		{"no roles", "CREATE TABLE t (a TEXT);", "CREATE TABLE t (a TEXT);", ""},
		{"roles replaced", "a {{int64}} NOT NULL, b {{bool}}, c {{int64}}", "a BIGINT NOT NULL, b BOOLEAN, c BIGINT", ""},
		{"role the dialect lacks", "a {{json}}", "", "column type {{json}}: none in this dialect"},
		{"unknown role", "a {{integer}}", "", "unknown column type {{integer}}"},
		{"unclosed", "a {{int64", "", "unclosed {{"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Render(tc.body)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Render(%q) = %q, %v; want an error with %q", tc.body, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Render(%q) = %q, %v; want %q", tc.body, got, err, tc.want)
			}
		})
	}
}

// Every migration names only known roles, and a dialect that gives every
// role a type renders each one whole.
func TestMigrationsRender(t *testing.T) {
	d := Dialect{Types: ColumnTypes{Int64: "I", Bool: "B", Bytes: "Y", Verbatim: "V", JSON: "J", OrderedText: "O", Seq: "S"}}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("migrations: %v %v", names, err)
	}
	for _, name := range names {
		if _, err := migrationVersion(name); err != nil {
			t.Error(err)
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := d.Render(string(body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(out, "{{") || strings.Contains(out, "}}") {
			t.Errorf("%s: braces left after rendering", name)
		}
	}
}

package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// The schema, once for both stores: column types are written {{role}} and
// a Dialect's Types give each role its type (Render).
//
//go:embed migrations/*.sql
var migrations embed.FS

// ColumnTypes are the types a dialect gives the column roles the migrations
// name, {{role}} in their text.
type ColumnTypes struct {
	Int64       string // {{int64}}: a signed 64-bit integer (times, amounts, counters)
	Bool        string // {{bool}}: a boolean; Go's bool goes in and comes out
	Bytes       string // {{bytes}}: bytes (a hash)
	Verbatim    string // {{verbatim}}: a JSON document kept byte for byte, never reformatted; nullable
	JSON        string // {{json}}: a JSON document the database may normalise
	OrderedText string // {{ordered_text}}: text compared and ordered bytewise, whatever the locale
	Seq         string // {{seq}}: an integer primary key the database assigns, growing with each insert
}

// of returns the type for role; known is false for a role there is no field for.
func (t ColumnTypes) of(role string) (typ string, known bool) {
	typ, known = map[string]string{"int64": t.Int64, "bool": t.Bool, "bytes": t.Bytes, "verbatim": t.Verbatim,
		"json": t.JSON, "ordered_text": t.OrderedText, "seq": t.Seq}[role]
	return typ, known
}

// Render returns a migration's text in the dialect: every {{role}} replaced
// by the dialect's type for it. A role the dialect leaves empty, or one
// ColumnTypes has no field for, is an error, never a gap in the schema.
func (d Dialect) Render(body string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(body, "{{")
		if i < 0 {
			b.WriteString(body)
			return b.String(), nil
		}
		j := strings.Index(body[i:], "}}")
		if j < 0 {
			return "", fmt.Errorf("unclosed {{ at %q", body[i:min(len(body), i+20)])
		}
		role := body[i+2 : i+j]
		typ, known := d.Types.of(role)
		if !known {
			return "", fmt.Errorf("unknown column type {{%s}}", role)
		}
		if typ == "" {
			return "", fmt.Errorf("column type {{%s}}: none in this dialect", role)
		}
		b.WriteString(body[:i])
		b.WriteString(typ)
		body = body[i+j+2:]
	}
}

// Migrate applies the migrations not yet recorded in schema_migrations, in
// version order, through q: a transaction of the store's, which also keeps
// concurrent callers (other processes) from applying one twice. script runs
// one migration's many statements.
func (d Dialect) Migrate(ctx context.Context, q Querier, script func(ctx context.Context, body string) error) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	for _, name := range names { // fs.Glob sorts, so versions apply in order
		version, err := migrationVersion(name)
		if err != nil {
			return err
		}
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		text, err := d.Render(string(body))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := script(ctx, text); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if _, err := q.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version); err != nil {
			return err
		}
	}
	return nil
}

func migrationVersion(name string) (int, error) {
	base := strings.TrimPrefix(name, "migrations/")
	prefix, _, ok := strings.Cut(base, "_")
	v, err := strconv.Atoi(prefix)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("migration %s: name must start with a positive version and _", name)
	}
	return v, nil
}

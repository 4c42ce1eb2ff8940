package bench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcpconform/mcpconform/reference/store/pgtest"
)

// TestMain removes the PostgreSQL container pgtest may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ dsn, want, err string }{
		{dsn: "postgres://u:p@127.0.0.1:5432/mcpconform?sslmode=disable", want: "postgres://u:p@127.0.0.1:5432/b_1?sslmode=disable"},
		{dsn: "postgresql://u@h", want: "postgresql://u@h/b_1"},
		{dsn: "postgres://u@h/a%2Fb?application_name=x", want: "postgres://u@h/b_1?application_name=x"},
		{dsn: "host=h dbname=mcpconform", err: "bench database: DATABASE_URL is not a postgres:// URL"},
	} {
		got, err := WithDatabase(tc.dsn, "b_1")
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("WithDatabase(%q) = %q, %v; want error %q", tc.dsn, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("WithDatabase(%q) = %q, %v; want %q", tc.dsn, got, err, tc.want)
		}
	}
}

// The bench's database starts empty but migrated, is listed as the bench's
// while it exists, and is gone, sessions and all, once dropped.
func TestDatabaseLifecycle(t *testing.T) {
	base := pgtest.DSN(t)
	ctx := t.Context()
	name := DatabasePrefix + "test_" + strconv.Itoa(os.Getpid())
	db, err := CreateDatabase(ctx, base, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()) })

	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	var current string
	var migrations, tools int
	if err := conn.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM schema_migrations), (SELECT count(*) FROM tools)`).
		Scan(&current, &migrations, &tools); err != nil {
		t.Fatal(err)
	}
	if current != name || migrations == 0 || tools != 0 {
		t.Errorf("database %q with %d migrations and %d tools; want %q, migrated, no tools", current, migrations, tools, name)
	}
	if left, err := LeftDatabases(ctx, base); err != nil || !slices.Contains(left, name) {
		t.Errorf("LeftDatabases = %v, %v; want %s among them", left, err, name)
	}

	// conn stays open: Drop must end it rather than fail.
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := LeftDatabases(ctx, base); err != nil || slices.Contains(left, name) {
		t.Errorf("after Drop, LeftDatabases = %v, %v; want no %s", left, err, name)
	}
	if _, err := CreateDatabase(ctx, base, name); err != nil {
		t.Errorf("create again after Drop: %v", err)
	} else if err := db.Drop(ctx); err != nil {
		t.Error(err)
	}
}

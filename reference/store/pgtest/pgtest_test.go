package pgtest

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestWithSearchPath(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:p@127.0.0.1:5432/db?sslmode=disable",
			"postgres://u:p@127.0.0.1:5432/db?options=-csearch_path%3Dt_1&sslmode=disable"},
		{"postgresql://u@h/db?options=-cstatement_timeout%3D5s",
			"postgresql://u@h/db?options=-cstatement_timeout%3D5s+-csearch_path%3Dt_1"},
		{"host=h user=u dbname=db", "host=h user=u dbname=db options='-csearch_path=t_1'"},
	} {
		got, err := WithSearchPath(tc.dsn, "t_1")
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("WithSearchPath(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
	if _, err := WithSearchPath("host=h options='-cx=1'", "t_1"); err == nil {
		t.Error("keyword/value dsn with options: no error")
	}
}

// FreshDSN's schema is the session's search_path and is empty.
func TestFreshDSN(t *testing.T) {
	dsn := FreshDSN(t)
	var path string
	var tables int
	query(t, dsn, "SHOW search_path", &path)
	query(t, dsn, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()", &tables)
	if len(path) < 3 || path[:2] != "t_" || tables != 0 {
		t.Errorf("search_path %q with %d tables, want a fresh t_ schema", path, tables)
	}
}

func query(t *testing.T, dsn, q string, dest any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if err := conn.QueryRow(t.Context(), q).Scan(dest); err != nil {
		t.Fatal(err)
	}
}

func TestMain(m *testing.M) { Main(m) }

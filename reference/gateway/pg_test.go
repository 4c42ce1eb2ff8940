package gateway_test

import (
	"testing"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reference/store/postgres"
)

// TestMain removes a PostgreSQL container pgtest may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// extraBackends lists PostgreSQL beside SQLite: DATABASE_URL, else a
// dockertest container, else skipped with the reason (a failure with
// MCPCONFORM_REQUIRE_POSTGRES=1).
func extraBackends(t *testing.T) []backend {
	openDSN := func(t *testing.T, dsn string) store.Store {
		t.Helper()
		s, err := postgres.Open(t.Context(), dsn, postgres.Options{LockTimeout: testLockTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return []backend{{
		name:  "postgres",
		probe: func(t *testing.T) { pgtest.DSN(t) },
		open: func(t *testing.T) (store.Store, reopener) {
			dsn := pgtest.FreshDSN(t)
			s := openDSN(t, dsn)
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s, func(t *testing.T) store.Store { return openDSN(t, dsn) }
		},
	}}
}

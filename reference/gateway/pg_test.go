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
	return []backend{{
		name:  "postgres",
		probe: func(t *testing.T) { pgtest.DSN(t) },
		open: func(t *testing.T) store.Store {
			t.Helper()
			s, err := postgres.Open(t.Context(), pgtest.FreshDSN(t), postgres.Options{LockTimeout: testLockTimeout})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s
		},
	}}
}

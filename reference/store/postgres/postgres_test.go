package postgres_test

import (
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/pgtest"
	"github.com/mcpconform/mcpconform/reference/store/postgres"
	"github.com/mcpconform/mcpconform/reference/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// handle adds storetest.Reopener: another pool on the same schema.
type handle struct {
	*postgres.Store
	dsn string
}

func (h handle) Reopen(t *testing.T, lockTimeout time.Duration) store.Store {
	return open(t, h.dsn, lockTimeout)
}

func open(t *testing.T, dsn string, lockTimeout time.Duration) handle {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn, postgres.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return handle{Store: s, dsn: dsn}
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.FreshDSN(t), 0)
	})
}

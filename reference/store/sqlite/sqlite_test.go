package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpconform/mcpconform/reference/store"
	"github.com/mcpconform/mcpconform/reference/store/sqlite"
	"github.com/mcpconform/mcpconform/reference/store/storetest"
)

// handle adds storetest.Reopener: another handle on the same file.
type handle struct {
	*sqlite.Store
	path string
}

func (h handle) Reopen(t *testing.T, lockTimeout time.Duration) store.Store {
	return open(t, h.path, lockTimeout)
}

func open(t *testing.T, path string, lockTimeout time.Duration) handle {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{LockTimeout: lockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return handle{Store: s, path: path}
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "gateway.db"), 0)
	})
}

package postgres

import "context"

// SetAfterLockRead installs the hook AcquireLock runs between reading a
// stale lock and taking it over.
func SetAfterLockRead(s *Store, fn func(ctx context.Context)) { s.SetAfterLockRead(fn) }

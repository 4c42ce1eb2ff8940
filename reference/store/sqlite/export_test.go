package sqlite

// PendingWrites is how many writes wait for the writer, so a test can know
// its writes are queued before it lets the writer go.
func (s *Store) PendingWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// SetCheckpointEvery sets the checkpoint cadence in writes (background,
// held), before the store's first write, so a test sees many cycles.
func (s *Store) SetCheckpointEvery(kick, full int) {
	s.kickEvery, s.fullEvery = kick, full
}

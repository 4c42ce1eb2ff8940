-- The retention purge reads the finished records oldest first. Partial, so
-- a reservation (in progress) writes no index entry; a record enters it
-- once, when it finishes, at the index's right edge (the gateway clock).
CREATE INDEX records_finished ON records (updated_at) WHERE state <> 'in_progress';

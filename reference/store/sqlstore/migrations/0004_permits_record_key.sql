-- An auto permit is found by its id (records.permit_id), never by its
-- record's key: the index cost every first call a random page write.
DROP INDEX permits_record_key;

-- An API key the operator revoked stays, so its id can never be issued or
-- imported again for another wallet or secret, but authenticates nothing.
ALTER TABLE api_keys ADD COLUMN revoked {{bool}} NOT NULL DEFAULT false;

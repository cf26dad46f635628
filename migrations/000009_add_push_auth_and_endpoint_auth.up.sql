-- Push auth and endpoint credentials per consumer group. push_auth_enabled makes the
-- worker add `Authorization: Bearer <JWT>` to each POST, with push_auth_audience as
-- `aud` (empty: the endpoint URL). endpoint_auth holds the group's static headers and
-- HTTP basic credentials as one JSON document, sealed at rest like signing secrets.
ALTER TABLE consumer_groups
  ADD COLUMN push_auth_enabled TINYINT(1) NOT NULL DEFAULT 0,
  ADD COLUMN push_auth_audience VARCHAR(2048) NOT NULL DEFAULT '',
  ADD COLUMN endpoint_auth TEXT NULL;

-- Herald's push-JWT signing keys (Ed25519). The newest key without retired_at signs;
-- retired keys stay published in the JWKS until the tokens they signed have expired.
-- private_key is the 32-byte seed, base64, sealed at rest.
CREATE TABLE push_keys (
  kid VARCHAR(64) NOT NULL PRIMARY KEY,
  private_key TEXT NOT NULL,
  created_at DATETIME(3) NOT NULL,
  retired_at DATETIME(3) NULL,
  KEY push_keys_retired (retired_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

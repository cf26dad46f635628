-- endpoint_auth holds up to 20 headers of 4,096 bytes and basic credentials as JSON
-- (JSON escapes a byte to up to 6), sealed (base64: 4/3): up to ≈ 670 KB, more than
-- TEXT's 64 KiB. MEDIUMTEXT takes 16 MiB.
ALTER TABLE consumer_groups MODIFY COLUMN endpoint_auth MEDIUMTEXT NULL;

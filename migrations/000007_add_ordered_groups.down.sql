ALTER TABLE cursors DROP COLUMN hold_until;
ALTER TABLE topics DROP COLUMN key_slots;
DROP TABLE ordered_blocks;
ALTER TABLE consumer_groups DROP COLUMN ordered_on_exhausted;

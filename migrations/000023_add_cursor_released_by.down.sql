ALTER TABLE cursors DROP COLUMN released_by;

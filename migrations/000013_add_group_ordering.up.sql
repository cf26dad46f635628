-- An ordered group's unit of order: 'key' (a message waits only for the earlier
-- messages of its key) or 'queue' (for every earlier message of its queue, as before
-- this column). Groups that were ordered keep the order they were created with;
-- unordered groups hold ''. New ordered groups default to 'key' in the application.
ALTER TABLE consumer_groups ADD COLUMN ordering VARCHAR(8) NOT NULL DEFAULT '' AFTER ordered_on_exhausted;
UPDATE consumer_groups SET ordering = 'queue' WHERE ordered = 1;

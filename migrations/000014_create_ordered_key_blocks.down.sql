DROP TABLE ordered_key_blocks;

-- Usernames compare byte for byte: utf8mb4_bin is a PAD SPACE collation on MariaDB
-- (and MySQL before 0900), so 'admin' and 'admin   ' were one account under two
-- spellings. VARBINARY never pads; 480 bytes holds any former VARCHAR(120) value.
ALTER TABLE users MODIFY username VARBINARY(480) NOT NULL;

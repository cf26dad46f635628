DROP TABLE queue_moves;

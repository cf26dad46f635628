DROP TABLE xa_decisions;

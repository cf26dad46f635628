package store

// AttemptSearchSQL exposes the attempt search statement to the store's tests, which
// EXPLAIN it.
func AttemptSearchSQL(f AttemptFilter) (string, []any) { return attemptSearchSQL(f) }

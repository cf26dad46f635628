package models

// Hole is a range of ids [From, To] missing between rows a cursor has read: an
// insert not yet committed or rolled back (InnoDB commits ids out of order). FirstSeenMS is the
// Unix ms at which the dispatcher first saw it missing.
type Hole struct {
	From        int64 `json:"f"`
	To          int64 `json:"t"`
	FirstSeenMS int64 `json:"s"`
}

// MaxCommittedHoles caps the hole ranges one cursor commit may list.
const MaxCommittedHoles = 256

// Cursor is a consumer group's committed position in one queue: every offset ≤ Offset
// is done except those in Holes. Version fences commits: a reset or an ownership change
// bumps it, and a commit naming an older version changes nothing (PMQ queue_offset).
type Cursor struct {
	ID      int64
	GroupID int64
	QueueID int64
	Offset  int64
	Holes   []Hole
	Version int64
	Owner   string
}

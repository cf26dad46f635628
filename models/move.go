package models

import "time"

// QueueMove is one queue sealed so its keys live on elsewhere (a topic move, a node
// drain): the key slots Slots went from queue From to queue To. Watermark is
// MAX(id) of From when the seal took hold (-1 while the seal is under way): no row
// of From is above it. Groups ordered by key send a moved key's messages on To only
// after they finished From up to Watermark and have nothing of that key left on
// From; groups ordered by queue hold To until they finished From; unordered groups
// do not wait. Retired is when From was drained by every group and dropped.
type QueueMove struct {
	ID        int64
	TopicID   int64
	From      int64
	To        int64
	Slots     []int
	Watermark int64
	CreatedAt time.Time
	SealedAt  *time.Time
	Retired   *time.Time
}

// Sealed reports whether the seal took hold (the watermark is final).
func (m QueueMove) Sealed() bool { return m.Watermark >= 0 }

// MovePlan pairs old queues with new ones for a topic move: the i-th queue of from
// (by position) hands every slot slots maps to it to the i-th of to. It returns, per
// old queue, the slots it gives up, and the new slot table. from and to have the
// same length.
func MovePlan(slots []int64, from, to []Queue) (moved map[int64][]int, next []int64) {
	pair := make(map[int64]int64, len(from))
	for i, q := range from {
		pair[q.ID] = to[i].ID
	}
	moved = make(map[int64][]int, len(from))
	next = make([]int64, len(slots))
	for s, q := range slots {
		next[s] = q
		if n, ok := pair[q]; ok {
			next[s] = n
			moved[q] = append(moved[q], s)
		}
	}
	return moved, next
}

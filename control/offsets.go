package control

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// OffsetReset moves a group's cursors: To is earliest, latest or timestamp (then
// Timestamp is RFC 3339, e.g. 2026-11-29T14:00:00Z); Queues limits the reset to
// those queue ids (empty: every queue).
type OffsetReset struct {
	To        string
	Timestamp string
	Queues    []int64
}

// ResetOffsets validates r, applies it to group name (bumping cursor versions, so
// owners reload), wakes the dispatchers and audits before and after
// (group.offsets.reset). It returns the cursors after the reset. Errors: a
// *models.ValidationError on /to or /timestamp, models.ErrNotFound.
func (c *Control) ResetOffsets(ctx context.Context, a Actor, name string, r OffsetReset) ([]store.CursorPosition, error) {
	var v models.ValidationError
	to := r.To
	switch r.To {
	case models.ConsumeEarliest, models.ConsumeLatest:
		if r.Timestamp != "" {
			v.Add("/timestamp", "give a timestamp only with \"to\": \"timestamp\"")
		}
	case "timestamp":
		ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil {
			v.Add("/timestamp", "must be an RFC 3339 time such as 2026-11-29T14:00:00Z")
		}
		to = ts.UTC().Format(time.RFC3339Nano)
	default:
		v.Add("/to", "must be earliest, latest or timestamp")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	before, err := c.st.GroupPositions(ctx, []int64{g.ID}, false)
	if err != nil {
		return nil, err
	}
	if _, err := c.st.CursorsReset(ctx, g.ID, to, r.Queues); err != nil {
		return nil, err
	}
	c.notifyGroup(ctx, g.ID)
	after, err := c.st.GroupPositions(ctx, []int64{g.ID}, true)
	if err != nil {
		return nil, err
	}
	c.Record(ctx, a, "group.offsets.reset", g.Name, offsetsOf(before),
		map[string]any{"to": r.To, "timestamp": r.Timestamp, "queues": r.Queues, "offsets": offsetsOf(after)})
	return after, nil
}

// offsetsOf maps queue id to committed offset, for the audit log.
func offsetsOf(ps []store.CursorPosition) map[int64]int64 {
	out := make(map[int64]int64, len(ps))
	for _, p := range ps {
		out[p.QueueID] = p.Offset
	}
	return out
}

package control

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/fence"
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
	before, err := c.st.Cursors().GroupPositions(ctx, []int64{g.ID}, false)
	if err != nil {
		return nil, err
	}
	reset, err := c.st.Cursors().CursorsReset(ctx, g.ID, to, r.Queues)
	if err != nil {
		return nil, err
	}
	// The fence is raised before the answer: from then on no worker starts a POST of
	// the old versions' jobs, whether still queued on asynq or running.
	versions := make(map[int64]int64, len(reset))
	for _, p := range reset {
		versions[p.QueueID] = p.Version
	}
	ferr := fence.Raise(ctx, c.rdb, c.keys, g.ID, versions)
	c.notifyGroup(ctx, g.ID) // the owner applies the reset to its cursors at once
	after, err := c.st.Cursors().GroupPositions(ctx, []int64{g.ID}, true)
	if err != nil {
		return nil, err
	}
	c.Record(ctx, a, "group.offsets.reset", g.Name, offsetsOf(before),
		map[string]any{"to": r.To, "timestamp": r.Timestamp, "queues": r.Queues, "offsets": offsetsOf(after)})
	if ferr != nil {
		c.log.Error("offsets reset but workers not fenced: jobs cut before the reset may still be sent", "group", g.Name, "err", ferr)
		return nil, fmt.Errorf("offsets of group %s reset, workers not fenced: %w", g.Name, ferr)
	}
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

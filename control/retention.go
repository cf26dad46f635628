package control

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/models"
)

// TopicRetention is a topic's retention as the admin views show it: its settings,
// HeldBackMessages (stored messages older than the retention that the groups in
// HeldBackBy, by name, have not consumed yet, so the consumed policy keeps them)
// and ExpiredByGroup (messages strict retention dropped before a group consumed
// them, by group name, since the group subscribed).
type TopicRetention struct {
	RetentionHours   int              `json:"retention_hours"`
	RetentionPolicy  string           `json:"retention_policy"`
	HeldBackMessages int64            `json:"held_back_messages"`
	HeldBackBy       []string         `json:"held_back_by"`
	ExpiredByGroup   map[string]int64 `json:"expired_by_group"`
}

// TopicRetention computes t's retention state now: per queue two index reads and a
// count of the held-back range.
func (c *Control) TopicRetention(ctx context.Context, t *models.Topic) (TopicRetention, error) {
	out := TopicRetention{RetentionHours: t.RetentionHours, RetentionPolicy: string(t.RetentionPolicy),
		HeldBackBy: []string{}, ExpiredByGroup: map[string]int64{}}
	by := map[int64]bool{}
	qids := make([]int64, 0, len(t.Queues))
	now := time.Now()
	for _, q := range t.Queues {
		qids = append(qids, q.ID)
		if c.st.Nodes().NodeIsDown(q.NodeID) && q.NodeID != models.PrimaryNodeID {
			continue // its held-back count is unknown until the node answers (NodesDown says so)
		}
		nctx, cancel := c.st.Nodes().NodeContext(ctx, q.NodeID)
		r, err := c.st.QueueRetentionGet(nctx, q.ID, now)
		cancel()
		if c.st.Nodes().NodeOutage(q.NodeID, err) {
			continue
		} else if err != nil {
			return out, err
		}
		out.HeldBackMessages += r.HeldBack
		if r.HeldBack > 0 {
			for g := range r.HeldBackBy {
				by[g] = true
			}
		}
	}
	expired, err := c.st.RetentionExpiredByGroup(ctx, qids)
	if err != nil {
		return out, err
	}
	ids := make([]int64, 0, len(by)+len(expired))
	for g := range by {
		ids = append(ids, g)
	}
	for g := range expired {
		ids = append(ids, g)
	}
	names, err := c.st.GroupNames(ctx, ids)
	if err != nil {
		return out, err
	}
	for g := range by {
		out.HeldBackBy = append(out.HeldBackBy, names[g])
	}
	slices.Sort(out.HeldBackBy)
	for g, n := range expired {
		if name, ok := names[g]; ok {
			out.ExpiredByGroup[name] = n
		}
	}
	return out, nil
}

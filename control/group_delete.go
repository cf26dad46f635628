package control

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/fence"
)

// DefaultDeletedGroupGrace is how long a deleted group's dead letters and attempt
// log are kept (for inspection) before maintenance removes them: 7 days.
const DefaultDeletedGroupGrace = 7 * 24 * time.Hour

// retiredFenceTTL is how long a deleted group's fence hash stays in Redis: longer
// than a worker's group cache (1 s) and a fence announcement's trip, after which a
// job of the group finds no group and sends nothing anyway.
const retiredFenceTTL = time.Minute

// GroupDeletion is what DeleteGroup removed: the group's name, whether its dead
// letters and attempt log went at once (Purged) or stay until PurgeAfter, and the
// dead-letter topic deleted with it (empty when it had none).
type GroupDeletion struct {
	Group      string    `json:"group"`
	Purged     bool      `json:"purged"`
	PurgeAfter time.Time `json:"purge_after,omitzero"`
	DLQTopic   string    `json:"dead_letter_topic,omitempty"`
}

// DeleteGroup removes consumer group name and stops its deliveries: its cursors,
// subscriptions and retry rows go at once, and its `<name>.dlq` topic with them;
// its dead letters and attempt log stay for DefaultDeletedGroupGrace unless purge
// is set. Before it answers, every worker is fenced off the group's jobs (queued,
// running, retries alike: no POST starts after the answer) and the owner
// dispatcher is told, so it drops the group at its next rebalance. Audited as
// group.delete. Errors:
// models.ErrNotFound; a *store.InUseError (models.ErrInUse)
// naming the other groups subscribed to its dead-letter topic, in which case
// nothing changes.
func (c *Control) DeleteGroup(ctx context.Context, a Actor, name string, purge bool) (GroupDeletion, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return GroupDeletion{}, err
	}
	purgeAfter := time.Now().Add(c.deletedGroupGrace)
	del, err := c.st.GroupDelete(ctx, name, purge, purgeAfter)
	if err != nil {
		return GroupDeletion{}, err
	}
	ferr := fence.Retire(ctx, c.rdb, c.keys, del.GroupID, del.Queues, retiredFenceTTL)
	c.notifyGroup(ctx, del.GroupID)
	if del.DLQTopic != "" {
		c.onTopicChange.run(del.DLQTopic)
	}
	out := GroupDeletion{Group: name, Purged: purge, DLQTopic: del.DLQTopic}
	if !purge {
		out.PurgeAfter = purgeAfter.UTC().Truncate(time.Millisecond)
	}
	c.Record(ctx, a, "group.delete", name, groupRecord{ID: g.ID, Name: g.Name, Status: string(g.Status), GroupSettings: SettingsOf(g)}, out)
	if ferr != nil {
		c.log.Error("group deleted but workers not fenced: jobs already cut may still be sent for about a second", "group", name, "err", ferr)
		return out, fmt.Errorf("group %s deleted, workers not fenced: %w", name, ferr)
	}
	return out, nil
}

package control

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// DefaultQueues is how many queues a topic gets when its spec names none.
const DefaultQueues = 4

// TopicSpec creates a topic: Name (models.ValidName, no .dlq suffix), Queues (1 to
// models.MaxQueuesPerTopic; nil: DefaultQueues), RetentionHours (1 to
// models.MaxRetentionHours; nil: 168) and RetentionPolicy ("consumed" or "strict";
// empty: consumed).
type TopicSpec struct {
	Name            string
	Queues          *int
	RetentionHours  *int
	RetentionPolicy models.RetentionPolicy
}

// TopicPatch changes a topic: Queues grows it to that many queues (never shrinks);
// ReadOnlyQueues lists the queue ids that take no publishes (replaced whole). Nil
// fields stay as they are.
// RetentionHours and RetentionPolicy replace the topic's retention (see TopicSpec).
type TopicPatch struct {
	Queues          *int
	ReadOnlyQueues  *[]int64
	RetentionHours  *int
	RetentionPolicy *models.RetentionPolicy
}

// topicRecord is a topic as the audit log records it.
type topicRecord struct {
	ID              int64         `json:"id"`
	Name            string        `json:"name"`
	Queues          []queueRecord `json:"queues"`
	RetentionHours  int           `json:"retention_hours"`
	RetentionPolicy string        `json:"retention_policy"`
	CreatedAt       time.Time     `json:"created_at"`
}

type queueRecord struct {
	ID       int64  `json:"id"`
	Position int    `json:"position"`
	State    string `json:"state"`
	Node     int64  `json:"node"`
}

func recordOfTopic(t *models.Topic) topicRecord {
	r := topicRecord{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC(), Queues: []queueRecord{},
		RetentionHours: t.RetentionHours, RetentionPolicy: string(t.RetentionPolicy)}
	for _, q := range t.Queues {
		r.Queues = append(r.Queues, queueRecord{ID: q.ID, Position: q.Position, State: string(q.State), Node: q.NodeID})
	}
	return r
}

// CreateTopic creates a topic with its queues and audits it (topic.create). Errors:
// models.ErrConflict for a taken name, a *models.ValidationError for a bad name or
// queue count, retention or policy (checked before anything is stored).
func (c *Control) CreateTopic(ctx context.Context, a Actor, spec TopicSpec) (*models.Topic, error) {
	n := DefaultQueues
	if spec.Queues != nil {
		n = *spec.Queues
	}
	hours := orDefault(spec.RetentionHours, models.DefaultRetentionHours)
	policy := spec.RetentionPolicy
	if policy == "" {
		policy = models.RetentionConsumed
	}
	if err := checkRetention(hours, policy); err != nil {
		return nil, err
	}
	t, err := c.st.TopicCreate(ctx, spec.Name, n)
	if err != nil {
		return nil, err
	}
	if hours != t.RetentionHours || policy != t.RetentionPolicy {
		if err := c.st.TopicSetRetention(ctx, t.ID, hours, policy); err != nil {
			return nil, err
		}
		t.RetentionHours, t.RetentionPolicy = hours, policy
	}
	c.Record(ctx, a, "topic.create", t.Name, nil, recordOfTopic(t))
	return t, nil
}

// PatchTopic applies p to topic name, wakes the dispatchers of its queues (and, when
// queues were added, the owners of the subscribed groups, which claim the new
// cursors), drops cached copies (OnTopicChange) and audits it (topic.update).
// Errors: ErrNotFound, ErrTopicMoving (growth while a move is unretired), or a
// *models.ValidationError for a shrinking queue count or a foreign queue id.
func (c *Control) PatchTopic(ctx context.Context, a Actor, name string, p TopicPatch) (*models.Topic, error) {
	t, err := c.st.TopicGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	before := recordOfTopic(t)
	if p.RetentionHours != nil || p.RetentionPolicy != nil {
		hours, policy := t.RetentionHours, t.RetentionPolicy
		if p.RetentionHours != nil {
			hours = *p.RetentionHours
		}
		if p.RetentionPolicy != nil {
			policy = *p.RetentionPolicy
		}
		if err := checkRetention(hours, policy); err != nil {
			return nil, err
		}
		if err := c.st.TopicSetRetention(ctx, t.ID, hours, policy); err != nil {
			return nil, err
		}
		t.RetentionHours, t.RetentionPolicy = hours, policy
	}
	if p.Queues != nil {
		// The store re-reads the topic under its row lock and refuses growth with
		// ErrTopicMoving while a move is unretired; t becomes the topic as grown.
		n := len(t.Queues)
		if err := c.st.TopicAddQueues(ctx, t, *p.Queues); err != nil {
			return nil, err
		}
		if len(t.Queues) > n {
			// The new queues' cursors belong to the subscribed groups: their owners
			// claim them at once instead of at their next sweep.
			ids, err := c.st.TopicSubscriberIDs(ctx, t.ID)
			if err != nil {
				return nil, err
			}
			c.notifyGroups(ctx, ids)
		}
	}
	if p.ReadOnlyQueues != nil {
		if err := c.st.QueuesSetReadOnly(ctx, t, *p.ReadOnlyQueues); err != nil {
			return nil, err
		}
	}
	c.onTopicChange.run(t.Name)
	qids := make([]int64, len(t.Queues))
	for i, q := range t.Queues {
		qids[i] = q.ID
	}
	c.notifyQueues(ctx, qids)
	c.Record(ctx, a, "topic.update", t.Name, before, recordOfTopic(t))
	return t, nil
}

// TopicsExisting reports which of names are topics now (one statement); the api
// drops the metric series of the others.
func (c *Control) TopicsExisting(ctx context.Context, names []string) (map[string]bool, error) {
	return c.st.TopicNamesExisting(ctx, names)
}

// DeleteTopic removes a topic, its queue tables and their messages, and audits it
// (topic.delete). While groups subscribe to it, it changes nothing and returns a
// *store.InUseError naming them (matching models.ErrInUse), unless force is set:
// then their subscriptions, cursors and retry rows on the topic go first, the
// groups' dispatchers are told, and the names of the groups that lost a
// subscription are returned (and audited). A running group left without any
// subscription is paused (models.NoSubscriptionsReason; group.paused audited, a
// group.paused event), stays editable, and resumes once it subscribes again.
// Errors: models.ErrNotFound.
func (c *Control) DeleteTopic(ctx context.Context, a Actor, name string, force bool) (unsubscribed []string, err error) {
	t, err := c.st.TopicGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	unsubscribed, err = c.st.TopicDelete(ctx, name, force)
	if err != nil {
		return nil, err
	}
	c.onTopicChange.run(name)
	for _, g := range unsubscribed {
		gr, err := c.st.GroupGetByName(ctx, g)
		if err != nil {
			continue
		}
		if len(gr.Subscriptions) == 0 && gr.Status == models.GroupRunning {
			// A running group with nothing to consume would look healthy while doing
			// nothing: it is paused, and says why, until it subscribes again.
			if _, err := c.setStatus(ctx, a, g, models.GroupPaused, models.NoSubscriptionsReason(name)); err != nil {
				c.log.Error("group left without subscriptions not paused", "group", g, "err", err)
			}
			continue
		}
		c.notifyGroup(ctx, gr.ID)
	}
	if unsubscribed == nil {
		unsubscribed = []string{}
	}
	c.Record(ctx, a, "topic.delete", name, recordOfTopic(t), map[string]any{"force": force, "unsubscribed_groups": unsubscribed})
	return unsubscribed, nil
}

// checkRetention validates a topic's retention before anything is stored.
func checkRetention(hours int, policy models.RetentionPolicy) error {
	var v models.ValidationError
	if hours < 1 || hours > models.MaxRetentionHours {
		v.Add("/retention_hours", fmt.Sprintf("must be between 1 and %d", models.MaxRetentionHours))
	}
	if !slices.Contains(models.RetentionPolicies(), policy) {
		v.Add("/retention_policy", "must be consumed or strict")
	}
	return v.Err()
}

// ListTopics returns one page of topics in id order.
func (c *Control) ListTopics(ctx context.Context, p PageRequest) (Page[*models.Topic], error) {
	ts, err := c.st.TopicList(ctx, p.After, p.Limit)
	if err != nil {
		return Page[*models.Topic]{}, err
	}
	return pageOf(ts, p.Limit, func(t *models.Topic) int64 { return t.ID }), nil
}

// TopicStats is what the admin views add to topics: each queue's lowest and highest
// offset (by queue id) and each topic's messages published in the last hour (by
// topic id, from the per-minute rollups).
type TopicStats struct {
	Offsets           map[int64]store.QueueOffsets
	PublishedLastHour map[int64]int64
	// NodesDown holds the down db nodes (by node id) whose queues' offsets are
	// missing from Offsets.
	NodesDown map[int64]models.NodeHealth
}

// TopicStats reads the stats of topics in two statements whatever their number.
func (c *Control) TopicStats(ctx context.Context, topics []*models.Topic) (TopicStats, error) {
	out := TopicStats{Offsets: map[int64]store.QueueOffsets{}, PublishedLastHour: map[int64]int64{}, NodesDown: map[int64]models.NodeHealth{}}
	var qids []int64
	for _, t := range topics {
		for _, q := range t.Queues {
			qids = append(qids, q.ID)
		}
	}
	if len(qids) == 0 {
		return out, nil
	}
	ranges, err := c.st.QueueOffsetRanges(ctx, qids)
	if err != nil {
		return out, err
	}
	totals, err := c.st.StatsTotalsSince(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		return out, err
	}
	out.Offsets = ranges
	for _, h := range c.st.Nodes().NodesDown() { // after the read, which marks a node it could not reach
		out.NodesDown[h.Node] = h
	}
	for _, t := range topics {
		out.PublishedLastHour[t.ID] = totals.TopicPublished[t.ID]
	}
	return out, nil
}

package control

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/models"
)

// BlockedQueues returns the queues of ordered group name stopped on a failed head
// message (retrying in place, or paused after max_attempts), by queue id, as the
// owning dispatcher last saved them (within a commit interval, about 1 s). Errors:
// models.ErrNotFound.
func (c *Control) BlockedQueues(ctx context.Context, name string) ([]models.OrderedBlock, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.st.Cursors().OrderedBlocksByGroups(ctx, []int64{g.ID}, false)
}

// SkipBlockedQueue asks the owner of queue queueID of ordered group name to make the
// messages it is blocked on dead letters and move on; audited (group.queue.skip).
// Errors: models.ErrNotFound when the group or the blocked queue does not exist.
func (c *Control) SkipBlockedQueue(ctx context.Context, a Actor, name string, queueID int64) (models.OrderedBlock, error) {
	return c.blockAction(ctx, a, name, queueID, models.OrderedActionSkip)
}

// ResumeBlockedQueue asks the owner of queue queueID of ordered group name to send
// the messages it is blocked on again now, with a fresh count of attempts; audited
// (group.queue.resume). Errors: models.ErrNotFound as SkipBlockedQueue.
func (c *Control) ResumeBlockedQueue(ctx context.Context, a Actor, name string, queueID int64) (models.OrderedBlock, error) {
	return c.blockAction(ctx, a, name, queueID, models.OrderedActionResume)
}

func (c *Control) blockAction(ctx context.Context, a Actor, name string, queueID int64, action string) (models.OrderedBlock, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return models.OrderedBlock{}, err
	}
	b, err := c.st.Cursors().OrderedBlockAction(ctx, g.ID, queueID, action)
	if err != nil {
		return b, err
	}
	c.notifyGroup(ctx, g.ID)
	c.Record(ctx, a, "group.queue."+action, g.Name, nil, map[string]any{"queue": queueID,
		"message": models.MessageID(queueID, b.Offset), "count": b.Count, "attempts": b.Attempts, "paused": b.Paused})
	return b, nil
}

// MaxListedBlockedKeys caps the blocked keys a group's stats and page list (the
// count is always whole).
const MaxListedBlockedKeys = 100

// SkipBlockedKey asks the owner of a group ordered by key to make the messages key
// waits on dead letters and send the key's later messages; queueID 0 means every
// queue of the group where key is blocked. Audited (group.key.skip) per queue.
// Errors: models.ErrNotFound when the group does not exist or key is not blocked.
func (c *Control) SkipBlockedKey(ctx context.Context, a Actor, name string, queueID int64, key string) ([]models.OrderedKeyBlock, error) {
	return c.keyAction(ctx, a, name, queueID, key, models.OrderedActionSkip)
}

// ResumeBlockedKey asks the owner of a group ordered by key to send the messages key
// waits on again now, with a fresh count of attempts; queueID 0 as SkipBlockedKey.
// Audited (group.key.resume). Errors: as SkipBlockedKey.
func (c *Control) ResumeBlockedKey(ctx context.Context, a Actor, name string, queueID int64, key string) ([]models.OrderedKeyBlock, error) {
	return c.keyAction(ctx, a, name, queueID, key, models.OrderedActionResume)
}

func (c *Control) keyAction(ctx context.Context, a Actor, name string, queueID int64, key, action string) ([]models.OrderedKeyBlock, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	queues := []int64{queueID}
	if queueID == 0 {
		queues = nil
		bs, err := c.st.Cursors().OrderedKeyBlocksByGroups(ctx, []int64{g.ID}, false, 0)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if b.Key == key {
				queues = append(queues, b.QueueID)
			}
		}
		if len(queues) == 0 {
			return nil, fmt.Errorf("blocked key %q of group %s: %w", key, g.Name, models.ErrNotFound)
		}
	}
	var out []models.OrderedKeyBlock
	for _, q := range queues {
		b, err := c.st.Cursors().OrderedKeyBlockAction(ctx, g.ID, q, key, action)
		if err != nil {
			return out, err
		}
		c.Record(ctx, a, "group.key."+action, g.Name, nil, map[string]any{"queue": q, "key": key,
			"message": models.MessageID(q, b.Offset), "count": b.Count, "attempts": b.Attempts, "paused": b.Paused})
		out = append(out, b)
	}
	c.notifyGroup(ctx, g.ID)
	return out, nil
}

package control

import (
	"context"

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
	return c.st.OrderedBlocksByGroups(ctx, []int64{g.ID}, false)
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
	b, err := c.st.OrderedBlockAction(ctx, g.ID, queueID, action)
	if err != nil {
		return b, err
	}
	c.notifyGroup(ctx, g.ID)
	c.Record(ctx, a, "group.queue."+action, g.Name, nil, map[string]any{"queue": queueID,
		"message": models.MessageID(queueID, b.Offset), "count": b.Count, "attempts": b.Attempts, "paused": b.Paused})
	return b, nil
}

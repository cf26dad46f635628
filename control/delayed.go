package control

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// ParkMessages stores msgs (delayed messages of one topic, each with its
// DeliverAt) durably until their time, all or none, with idem's row when set (its
// response built by respond), and fills their IDs; the maintenance leader, told
// the earliest due time (notify.Notifier.Delayed), moves each into its topic's
// queue when due. Errors: models.ErrConflict for a live row
// of idem's key, the store's otherwise.
func (c *Control) ParkMessages(ctx context.Context, msgs []models.DelayedMessage, idem *store.IdempotencyRecord, respond func([]models.DelayedMessage) (int, []byte)) error {
	if err := c.st.DelayedInsert(ctx, msgs, idem, respond); err != nil {
		return err
	}
	earliest := msgs[0].DeliverAt
	for _, m := range msgs[1:] {
		if m.DeliverAt.Before(earliest) {
			earliest = m.DeliverAt
		}
	}
	// A hint: a lost one costs at most the mover's idle re-check.
	if err := c.notifier.Delayed(context.WithoutCancel(ctx), earliest); err != nil {
		c.log.Warn("notify the delayed-message mover; it finds them at its next check", "err", err)
	}
	return nil
}

// GetDelayed returns delayed message id ("dly_…") while it waits, with its topic's
// name. Errors: models.ErrNotFound for a malformed id or one no longer waiting
// (moved into its topic at its time, or cancelled).
func (c *Control) GetDelayed(ctx context.Context, id string) (*models.DelayedMessage, string, error) {
	n, err := models.ParseDelayedID(id)
	if err != nil {
		return nil, "", fmt.Errorf("message %q: %w", id, models.ErrNotFound)
	}
	m, err := c.st.DelayedGet(ctx, n)
	if err != nil {
		return nil, "", err
	}
	name := ""
	if t, err := c.st.TopicGetByID(ctx, m.TopicID); err == nil {
		name = t.Name
	}
	return m, name, nil
}

// CancelDelayed deletes delayed message id ("dly_…") before its time, so it is
// never delivered; audited as message.cancel. Errors: models.ErrNotFound for a
// malformed id or one no longer waiting; a *models.ValidationError for the id of a
// message already in its queue ("msg_…"), which cannot be cancelled.
func (c *Control) CancelDelayed(ctx context.Context, a Actor, id string) error {
	if _, _, err := models.ParseMessageID(id); err == nil {
		return invalid("/id", "only a delayed message (dly_…) that is not yet due can be cancelled; this one is in its queue")
	}
	n, err := models.ParseDelayedID(id)
	if err != nil {
		return fmt.Errorf("message %q: %w", id, models.ErrNotFound)
	}
	m, err := c.st.DelayedGet(ctx, n)
	if err != nil {
		return err
	}
	if err := c.st.DelayedCancel(ctx, n); err != nil {
		return err
	}
	c.Record(ctx, a, "message.cancel", id, map[string]any{"topic_id": m.TopicID, "deliver_at": m.DeliverAt}, nil)
	return nil
}

// WaitingDelayed returns the first limit delayed messages of topic t that wait
// for their time, earliest due first, and how many wait in all.
func (c *Control) WaitingDelayed(ctx context.Context, t *models.Topic, limit int) ([]models.DelayedMessage, int64, error) {
	ms, err := c.st.DelayedList(ctx, t.ID, limit)
	if err != nil {
		return nil, 0, err
	}
	n, err := c.st.DelayedCount(ctx, t.ID)
	return ms, n, err
}

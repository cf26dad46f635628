package control

import (
	"context"

	"github.com/heraldhq/herald/models"
)

// publishEvent appends ev to models.EventsTopic and wakes its dispatchers. A failure
// is logged, not returned: the action it reports has already happened.
func (c *Control) publishEvent(ctx context.Context, ev models.Event) {
	ctx = context.WithoutCancel(ctx)
	q, err := c.st.EventAppend(ctx, ev)
	if err != nil {
		c.log.Warn("publish operational event", "type", ev.Type, "group", ev.Group, "err", err)
		return
	}
	c.notifyQueues(ctx, []int64{q})
}

// ensureEventsTopic creates models.EventsTopic when g subscribes to it before any
// event was published.
func (c *Control) ensureEventsTopic(ctx context.Context, g *models.Group) error {
	for _, sub := range g.Subscriptions {
		if sub.Topic == models.EventsTopic {
			_, err := c.st.EventsTopicEnsure(ctx)
			return err
		}
	}
	return nil
}

package control

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/models"
)

// ensureDeadLetterTopics creates the dead-letter topic `<group>.dlq` (one queue,
// as the outbox would) of every other existing group g subscribes to, so a
// dead-letter handler can be set up before the first dead letter. The reserved-name
// rules stay: users still cannot create such a topic by hand, publish to it or
// match it with an API key, and a group subscribing to its own is refused by the
// store. A `.dlq` name whose group does not exist is a *models.ValidationError on
// the subscription's topic.
func (c *Control) ensureDeadLetterTopics(ctx context.Context, g *models.Group) error {
	var v models.ValidationError
	for i, sub := range g.Subscriptions {
		owner, ok := strings.CutSuffix(sub.Topic, models.DeadLetterSuffix)
		if !ok || owner == g.Name {
			continue
		}
		if _, err := c.st.TopicGetByName(ctx, sub.Topic); err == nil {
			continue
		} else if !errors.Is(err, models.ErrNotFound) {
			return err
		}
		if _, err := c.st.GroupGetByName(ctx, owner); errors.Is(err, models.ErrNotFound) {
			v.Add(fmt.Sprintf("/subscriptions/%d/topic", i), "no topic named "+sub.Topic+" and no group named "+owner+" whose dead letters it would hold")
			continue
		} else if err != nil {
			return err
		}
		if _, err := c.st.TopicCreateReserved(ctx, sub.Topic, 1); err != nil && !errors.Is(err, models.ErrConflict) {
			return fmt.Errorf("create dead-letter topic %s: %w", sub.Topic, err)
		}
	}
	return v.Err()
}

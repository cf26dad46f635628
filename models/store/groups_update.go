package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/heraldhq/herald/models"
)

// GroupUpdate writes g's settings (endpoint, limits, retries, ordering, consume_from)
// and replaces its subscriptions whole, bumping config_version so dispatchers rebuild
// their limiters and workers reload within a second. A newly subscribed topic gets
// cursors placed by g.ConsumeFrom in this transaction; an unsubscribed topic loses
// its subscription and cursors (the retry topic is untouched); a kept topic only has
// its tags replaced. g must be validated; name, secret and status are not changed
// here. Errors: ErrNotFound, or a *ValidationError naming an unknown topic or the
// group's own dead-letter topic.
func (s *Store) GroupUpdate(ctx context.Context, g *models.Group) error {
	topics, err := s.subscriptionTopics(ctx, g)
	if err != nil {
		return err
	}
	schedule, _ := json.Marshal(g.RetrySchedule)
	now := time.Now().UTC().Truncate(time.Millisecond)
	return s.WithTx(ctx, func(tx *Store) error {
		res := tx.db.Model(&groupRow{}).Where("id = ?", g.ID).Updates(map[string]any{
			"endpoint_url": g.EndpointURL, "batch_size": g.BatchSize, "batch_max_bytes": g.BatchMaxBytes,
			"batch_window_ms": g.BatchWindowMS, "max_in_flight": g.MaxInFlight, "rate_limit": g.RateLimit,
			"timeout_ms": g.TimeoutMS, "max_attempts": g.MaxAttempts, "retry_schedule": string(schedule),
			"ordered": g.Ordered, "consume_from": g.ConsumeFrom,
			"config_version": gorm.Expr("config_version + 1"), "updated_at": now,
		})
		if res.Error != nil {
			return fmt.Errorf("update group %d: %w", g.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("group %d: %w", g.ID, models.ErrNotFound)
		}
		var existing []subscriptionRow
		if err := tx.db.Where("group_id = ?", g.ID).Find(&existing).Error; err != nil {
			return fmt.Errorf("read subscriptions: %w", err)
		}
		have := map[int64]bool{}
		for _, e := range existing {
			if _, keep := topics[e.TopicID]; keep {
				have[e.TopicID] = true
				continue
			}
			if err := tx.db.Delete(&subscriptionRow{}, e.ID).Error; err != nil {
				return fmt.Errorf("delete subscription: %w", err)
			}
			err := tx.db.Exec("DELETE FROM cursors WHERE group_id = ? AND queue_id IN (SELECT id FROM queues WHERE topic_id = ?)", g.ID, e.TopicID).Error
			if err != nil {
				return fmt.Errorf("delete cursors of topic %d: %w", e.TopicID, err)
			}
		}
		for _, sub := range g.Subscriptions {
			tags, _ := json.Marshal(nonNil(sub.Tags))
			if have[sub.TopicID] {
				if err := tx.db.Model(&subscriptionRow{}).Where("group_id = ? AND topic_id = ?", g.ID, sub.TopicID).Update("tags", tags).Error; err != nil {
					return fmt.Errorf("update subscription tags: %w", err)
				}
				continue
			}
			if err := tx.db.Create(&subscriptionRow{GroupID: g.ID, TopicID: sub.TopicID, Tags: tags}).Error; err != nil {
				return fmt.Errorf("insert subscription: %w", err)
			}
			if err := tx.cursorsCreate(ctx, g.ID, topics[sub.TopicID], g.ConsumeFrom, now); err != nil {
				return err
			}
		}
		return nil
	})
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

// EventsTopicEnsure returns models.EventsTopic, creating it with one queue when it
// does not exist yet (a group subscribing to it, or the first event).
func (s *Store) EventsTopicEnsure(ctx context.Context) (*models.Topic, error) {
	t, err := s.TopicGetByName(ctx, models.EventsTopic)
	if errors.Is(err, models.ErrNotFound) {
		t, err = s.TopicCreateReserved(ctx, models.EventsTopic, 1)
		if errors.Is(err, models.ErrConflict) {
			t, err = s.TopicGetByName(ctx, models.EventsTopic)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("events topic: %w", err)
	}
	return t, nil
}

// EventAppend publishes ev to models.EventsTopic (created with one queue on first
// use) as one message: tag the event type, key the group name, a JSON body, and
// returns the queue it went to so the caller can notify it. ev.Time zero means now.
func (s *Store) EventAppend(ctx context.Context, ev models.Event) (int64, error) {
	t, err := s.EventsTopicEnsure(ctx)
	if err != nil {
		return 0, err
	}
	if len(t.Queues) == 0 {
		return 0, fmt.Errorf("events topic has no queue: %w", models.ErrQueueUnavailable)
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Time = ev.Time.UTC().Truncate(time.Millisecond)
	if ev.Data == nil {
		ev.Data = map[string]any{}
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, fmt.Errorf("encode event: %w", err)
	}
	q := t.Queues[0].ID
	c, err := s.Nodes().nodeConn(ctx, t.Queues[0].NodeID)
	if err != nil {
		return 0, fmt.Errorf("append %s event: %w", ev.Type, err)
	}
	_, err = c.ExecContext(ctx, "INSERT INTO "+models.QueueTableName(q)+" (tag, msg_key, headers, body, content_type, trace_id, created_at, producer_ip) VALUES (?, ?, '{}', ?, 'application/json', '', ?, '')",
		string(ev.Type), ev.Group, body, ev.Time.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("append %s event: %w", ev.Type, err)
	}
	return q, nil
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/heraldhq/herald/models"
)

type groupRow struct {
	ID            int64 `gorm:"primaryKey"`
	Name          string
	EndpointURL   string
	SigningSecret string
	// PreviousSigningSecret and PreviousSecretExpiresAt keep the rotated-out secret signing
	// during the overlap window (migration 000003).
	PreviousSigningSecret   string
	PreviousSecretExpiresAt *time.Time
	BatchSize               int
	BatchMaxBytes           int
	BatchWindowMS           int `gorm:"column:batch_window_ms"`
	MaxInFlight             int
	RateLimit               int
	TimeoutMS               int `gorm:"column:timeout_ms"`
	MaxAttempts             int
	RetrySchedule           string
	Ordered                 bool
	OrderedOnExhausted      string
	// Ordering is key, queue or '' (migration 000013).
	Ordering    string
	ConsumeFrom string
	// DeadLetterRetentionHours bounds how long dead letters are kept (migration 000008).
	DeadLetterRetentionHours int
	// MaxThrottles is models.Group.MaxThrottles (migration 000024).
	MaxThrottles int
	Status       string
	PausedReason string
	// PushAuthEnabled, PushAuthAudience and EndpointAuth (sealed JSON of
	// models.EndpointAuth; NULL when none) come from migration 000009.
	PushAuthEnabled  bool
	PushAuthAudience string
	EndpointAuth     *string
	ConfigVersion    int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

func (groupRow) TableName() string { return "consumer_groups" }

type subscriptionRow struct {
	ID      int64 `gorm:"primaryKey"`
	GroupID int64
	TopicID int64
	Tags    []byte
	// AttributeFilter is models.Subscription.Filter (migration 000015; empty: none).
	AttributeFilter string
}

func (subscriptionRow) TableName() string { return "subscriptions" }

type cursorRow struct {
	ID              int64 `gorm:"primaryKey"`
	GroupID         int64
	QueueID         int64
	CommittedOffset int64
	Holes           []byte
	Version         int64
	Owner           string
	UpdatedAt       time.Time
}

func (cursorRow) TableName() string { return "cursors" }

// GroupCreate stores g with its subscriptions and one cursor per queue of each
// subscribed topic, placed by g.ConsumeFrom in this request (so a message published
// after it returns is delivered). g must be validated; its ID, timestamps and
// ConfigVersion are filled in. Errors: ErrConflict for a taken name, a
// *ValidationError for an unknown topic or a group subscribing to its own dead-letter topic.
func (s *Store) GroupCreate(ctx context.Context, g *models.Group) error {
	topics, err := s.subscriptionTopics(ctx, g)
	if err != nil {
		return err
	}
	schedule, _ := json.Marshal(g.RetrySchedule)
	now := time.Now().UTC().Truncate(time.Millisecond)
	row := groupRow{
		Name: g.Name, EndpointURL: g.EndpointURL, SigningSecret: s.keys.Seal(g.SigningSecret),
		BatchSize: g.BatchSize, BatchMaxBytes: g.BatchMaxBytes, BatchWindowMS: g.BatchWindowMS,
		MaxInFlight: g.MaxInFlight, RateLimit: g.RateLimit, TimeoutMS: g.TimeoutMS,
		MaxAttempts: g.MaxAttempts, RetrySchedule: string(schedule), Ordered: g.Ordered,
		OrderedOnExhausted: string(g.OrderedOnExhausted), Ordering: string(g.Ordering),
		ConsumeFrom: g.ConsumeFrom, Status: string(g.Status), PausedReason: g.PausedReason,
		DeadLetterRetentionHours: dlRetention(g.DeadLetterRetentionHours), MaxThrottles: maxThrottles(g.MaxThrottles), ConfigVersion: 1, CreatedAt: now, UpdatedAt: now,
	}
	row.PushAuthEnabled, row.PushAuthAudience = pushAuthColumns(g)
	row.EndpointAuth = s.sealEndpointAuth(g.EndpointAuth)
	return s.WithTx(ctx, func(tx *Store) error {
		if err := tx.db.Create(&row).Error; err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("group %q: %w", g.Name, models.ErrConflict)
			}
			return fmt.Errorf("insert group: %w", err)
		}
		for _, sub := range g.Subscriptions {
			tags, _ := json.Marshal(nonNil(sub.Tags))
			if err := tx.db.Create(&subscriptionRow{GroupID: row.ID, TopicID: sub.TopicID, Tags: tags, AttributeFilter: sub.Filter}).Error; err != nil {
				return fmt.Errorf("insert subscription: %w", err)
			}
			if err := tx.cursorsCreate(ctx, row.ID, topics[sub.TopicID], g.ConsumeFrom, now); err != nil {
				return err
			}
		}
		g.ID, g.CreatedAt, g.UpdatedAt, g.ConfigVersion = row.ID, now, now, 1
		return nil
	})
}

// subscriptionTopics resolves g's subscribed topics (filling each TopicID) by id,
// or returns a *ValidationError naming unknown topics, topics listed twice and the
// group's own dead-letter topic.
func (s *Store) subscriptionTopics(ctx context.Context, g *models.Group) (map[int64]*models.Topic, error) {
	topics := map[int64]*models.Topic{}
	var v models.ValidationError
	for i, sub := range g.Subscriptions {
		t, err := s.TopicGetByName(ctx, sub.Topic)
		if err != nil {
			v.Add(fmt.Sprintf("/subscriptions/%d/topic", i), "no topic named "+sub.Topic)
			continue
		}
		if sub.Topic == g.Name+models.DeadLetterSuffix {
			v.Add(fmt.Sprintf("/subscriptions/%d/topic", i), "a group may not subscribe to its own dead-letter topic")
		}
		if _, dup := topics[t.ID]; dup {
			v.Add(fmt.Sprintf("/subscriptions/%d/topic", i), "topic listed twice")
		}
		topics[t.ID] = t
		g.Subscriptions[i].TopicID = t.ID
	}
	return topics, v.Err()
}

// cursorsCreate gives a group one cursor per queue of topic t, placed by consumeFrom.
func (s *Store) cursorsCreate(ctx context.Context, groupID int64, t *models.Topic, consumeFrom string, now time.Time) error {
	for _, q := range t.Queues {
		off, err := s.startOffset(ctx, q.ID, consumeFrom)
		if err != nil {
			return err
		}
		c := cursorRow{GroupID: groupID, QueueID: q.ID, CommittedOffset: off, Holes: []byte("[]"), Version: 1, UpdatedAt: now}
		if err := s.db.Create(&c).Error; err != nil {
			return fmt.Errorf("insert cursor: %w", err)
		}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// startOffset resolves consume_from for one queue: earliest → 0; latest → its max
// offset (QueueMaxIDs); a timestamp → the offset just before the first message at
// or after it, or the max offset when none is.
func (s *Store) startOffset(ctx context.Context, queueID int64, from string) (int64, error) {
	table := models.QueueTableName(queueID)
	node, err := s.Nodes().QueueNode(ctx, queueID)
	if err != nil {
		return 0, err
	}
	if node != models.PrimaryNodeID {
		return s.startOffsetOn(ctx, node, queueID, from)
	}
	var off int64
	switch from {
	case models.ConsumeEarliest:
		return 0, nil
	case models.ConsumeLatest:
		err := s.db.WithContext(ctx).Raw("SELECT " + maxOffsetExpr(queueID)).Scan(&off).Error
		return off, err
	default:
		ts, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			return 0, fmt.Errorf("consume_from: %w", models.ErrInvalid)
		}
		err = s.db.WithContext(ctx).Raw("SELECT COALESCE((SELECT MIN(id) - 1 FROM "+table+" WHERE created_at >= ?), (SELECT "+maxOffsetExpr(queueID)+"))", ts.UnixMilli()).Scan(&off).Error
		return off, err
	}
}

// startOffsetOn is startOffset for a queue on db node node (not the control
// database): the queue table's statement there, pruned_through from control.
func (s *Store) startOffsetOn(ctx context.Context, node, queueID int64, from string) (int64, error) {
	if from == models.ConsumeEarliest {
		return 0, nil
	}
	if from != models.ConsumeLatest {
		ts, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			return 0, fmt.Errorf("consume_from: %w", models.ErrInvalid)
		}
		c, err := s.Nodes().nodeConn(ctx, node)
		if err != nil {
			return 0, err
		}
		var off sql.NullInt64
		if err := c.QueryRowContext(ctx, "SELECT MIN(id) - 1 FROM "+models.QueueTableName(queueID)+" WHERE created_at >= ?", ts.UnixMilli()).Scan(&off); err != nil {
			return 0, fmt.Errorf("resolve consume_from on queue %d: %w", queueID, err)
		}
		if off.Valid {
			return off.Int64, nil
		}
	}
	maxes, err := s.Queues().QueueMaxIDs(ctx, []int64{queueID})
	if err != nil {
		return 0, err
	}
	return maxes[queueID], nil
}

// GroupGetByName returns the group with its subscriptions, or ErrNotFound (also, without
// a query, for a name models.PossibleName refuses).
func (s *Store) GroupGetByName(ctx context.Context, name string) (*models.Group, error) {
	if !models.PossibleName(name) {
		return nil, fmt.Errorf("group %q: %w", name, models.ErrNotFound)
	}
	return s.groupGet(ctx, "name = ?", name)
}

// GroupGetByID returns the group with its subscriptions, or ErrNotFound.
func (s *Store) GroupGetByID(ctx context.Context, id int64) (*models.Group, error) {
	return s.groupGet(ctx, "id = ?", id)
}

func (s *Store) groupGet(ctx context.Context, where string, arg any) (*models.Group, error) {
	var r groupRow
	if err := s.db.WithContext(ctx).Where(where, arg).Take(&r).Error; err != nil {
		return nil, notFound(err, fmt.Sprintf("group %v", arg))
	}
	gs, err := s.withSubscriptions(ctx, []groupRow{r})
	if err != nil {
		return nil, err
	}
	return gs[0], nil
}

// GroupList returns up to limit groups with id > after, ordered by id. limit ≤ 0 means all.
// A group whose stored secrets or endpoint auth cannot be read is returned with
// Unreadable set (and those fields empty), as by every group read here.
func (s *Store) GroupList(ctx context.Context, after int64, limit int) ([]*models.Group, error) {
	var rows []groupRow
	q := s.db.WithContext(ctx).Where("id > ?", after).Order("id")
	if limit > 0 {
		q = q.Limit(limit)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return s.withSubscriptions(ctx, rows)
}

// GroupsByIDs returns the listed groups that exist, ordered by id, with their
// subscriptions (two statements whatever the number); a deleted group is simply
// absent.
func (s *Store) GroupsByIDs(ctx context.Context, ids []int64) ([]*models.Group, error) {
	if len(ids) == 0 {
		return []*models.Group{}, nil
	}
	var rows []groupRow
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read groups: %w", err)
	}
	return s.withSubscriptions(ctx, rows)
}

func (s *Store) withSubscriptions(ctx context.Context, rows []groupRow) ([]*models.Group, error) {
	out := make([]*models.Group, 0, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	type subJoin struct {
		GroupID int64
		TopicID int64
		Name    string
		Tags    []byte
		// AttributeFilter is the subscription's filter source.
		AttributeFilter string
	}
	var subs []subJoin
	err := s.db.WithContext(ctx).Raw("SELECT s.group_id, s.topic_id, t.name, s.tags, s.attribute_filter FROM subscriptions s JOIN topics t ON t.id = s.topic_id WHERE s.group_id IN ? ORDER BY s.id", ids).Scan(&subs).Error
	if err != nil {
		return nil, fmt.Errorf("read subscriptions: %w", err)
	}
	byGroup := map[int64][]models.Subscription{}
	for _, sj := range subs {
		var tags []string
		_ = json.Unmarshal(sj.Tags, &tags)
		sub := models.Subscription{TopicID: sj.TopicID, Topic: sj.Name, Tags: tags, Filter: sj.AttributeFilter}
		// Stored filters were validated on write; one that no longer parses matches
		// nothing (MatchesAttributes) rather than everything.
		sub.Compiled, _ = models.ParseFilter(sj.AttributeFilter)
		byGroup[sj.GroupID] = append(byGroup[sj.GroupID], sub)
	}
	for _, r := range rows {
		// A column that cannot be read back makes this group unreadable, never the
		// whole list: one group's settings must not stop another's deliveries.
		var unreadable []string
		secret, err := s.keys.Open(r.SigningSecret)
		if err != nil {
			unreadable = append(unreadable, "signing secret: "+err.Error())
		}
		prev, err := s.keys.Open(r.PreviousSigningSecret)
		if err != nil {
			unreadable = append(unreadable, "previous signing secret: "+err.Error())
		}
		g := &models.Group{
			ID: r.ID, Name: r.Name, EndpointURL: r.EndpointURL, SigningSecret: secret,
			PreviousSigningSecret: prev, PreviousSecretExpiresAt: r.PreviousSecretExpiresAt,
			Subscriptions: byGroup[r.ID], BatchSize: r.BatchSize, BatchMaxBytes: r.BatchMaxBytes,
			BatchWindowMS: r.BatchWindowMS, MaxInFlight: r.MaxInFlight, RateLimit: r.RateLimit,
			TimeoutMS: r.TimeoutMS, MaxAttempts: r.MaxAttempts, Ordered: r.Ordered,
			OrderedOnExhausted: models.OnExhausted(r.OrderedOnExhausted), Ordering: models.Ordering(r.Ordering),
			ConsumeFrom: r.ConsumeFrom, Status: models.GroupStatus(r.Status), PausedReason: r.PausedReason,
			DeadLetterRetentionHours: r.DeadLetterRetentionHours, MaxThrottles: r.MaxThrottles, ConfigVersion: r.ConfigVersion, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		}
		_ = json.Unmarshal([]byte(r.RetrySchedule), &g.RetrySchedule)
		if r.PushAuthEnabled {
			g.PushAuth = &models.PushAuth{Audience: r.PushAuthAudience}
		}
		if g.EndpointAuth, err = s.openEndpointAuth(r.EndpointAuth); err != nil {
			unreadable = append(unreadable, "endpoint auth: "+err.Error())
		}
		if len(unreadable) > 0 {
			g.SigningSecret, g.PreviousSigningSecret, g.EndpointAuth = "", "", models.EndpointAuth{}
			g.Unreadable = strings.Join(unreadable, "; ")
		}
		out = append(out, g)
	}
	return out, nil
}

// GroupSetStatus sets a group's status and reason and bumps its config version; it
// returns the config version written (read back under the row lock, so it is this
// change's even when others race), which fences the status for workers
// (fence.RaiseStatus).
func (s *Store) GroupSetStatus(ctx context.Context, id int64, st models.GroupStatus, reason string) (configVersion int64, err error) {
	err = s.WithTx(ctx, func(tx *Store) error {
		res := tx.db.Model(&groupRow{}).Where("id = ?", id).Updates(map[string]any{
			"status": string(st), "paused_reason": reason, "config_version": gorm.Expr("config_version + 1"), "updated_at": time.Now().UTC(),
		})
		if res.Error != nil {
			return fmt.Errorf("set group %d status: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("group %d: %w", id, models.ErrNotFound)
		}
		if err := tx.db.Model(&groupRow{}).Where("id = ?", id).Select("config_version").Scan(&configVersion).Error; err != nil {
			return fmt.Errorf("read group %d config version: %w", id, err)
		}
		return nil
	})
	return configVersion, err
}

// GroupUpdate writes g's settings (endpoint, limits, retries, ordering, consume_from)
// and replaces its subscriptions whole, bumping config_version so dispatchers rebuild
// their limiters and workers reload within a second. A newly subscribed topic gets
// cursors placed by g.ConsumeFrom in this transaction; an unsubscribed topic loses
// its subscription and cursors (the retry topic is untouched); a kept topic only has
// its tags replaced. g must be validated; name, secret and status are not changed
// here. Errors: ErrNotFound, or a *ValidationError naming an unknown topic or the
// group's own dead-letter topic.
// ErrGroupChanged means GroupUpdate found the group at another config_version than
// the one it was read at: another change landed in between. Read it again and reapply.
var ErrGroupChanged = errors.New("group changed meanwhile")

func (s *Store) GroupUpdate(ctx context.Context, g *models.Group) error {
	topics, err := s.subscriptionTopics(ctx, g)
	if err != nil {
		return err
	}
	schedule, _ := json.Marshal(g.RetrySchedule)
	now := time.Now().UTC().Truncate(time.Millisecond)
	pushOn, audience := pushAuthColumns(g)
	return s.WithTx(ctx, func(tx *Store) error {
		// Fenced by config_version: a change made since g was read fails with
		// ErrGroupChanged instead of being overwritten (no lost update).
		res := tx.db.Model(&groupRow{}).Where("id = ? AND config_version = ?", g.ID, g.ConfigVersion).Updates(map[string]any{
			"push_auth_enabled": pushOn, "push_auth_audience": audience, "endpoint_auth": tx.sealEndpointAuth(g.EndpointAuth),
			"endpoint_url": g.EndpointURL, "batch_size": g.BatchSize, "batch_max_bytes": g.BatchMaxBytes,
			"batch_window_ms": g.BatchWindowMS, "max_in_flight": g.MaxInFlight, "rate_limit": g.RateLimit,
			"timeout_ms": g.TimeoutMS, "max_attempts": g.MaxAttempts, "retry_schedule": string(schedule),
			"ordered": g.Ordered, "ordered_on_exhausted": string(g.OrderedOnExhausted), "ordering": string(g.Ordering), "consume_from": g.ConsumeFrom,
			"dead_letter_retention_hours": dlRetention(g.DeadLetterRetentionHours), "max_throttles": maxThrottles(g.MaxThrottles),
			"config_version": gorm.Expr("config_version + 1"), "updated_at": now,
		})
		if res.Error != nil {
			return fmt.Errorf("update group %d: %w", g.ID, res.Error)
		}
		if res.RowsAffected == 0 {
			var n int64
			if err := tx.db.Model(&groupRow{}).Where("id = ?", g.ID).Count(&n).Error; err != nil {
				return fmt.Errorf("update group %d: %w", g.ID, err)
			}
			if n > 0 {
				return fmt.Errorf("group %d: %w", g.ID, ErrGroupChanged)
			}
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
				if err := tx.db.Model(&subscriptionRow{}).Where("group_id = ? AND topic_id = ?", g.ID, sub.TopicID).
					Updates(map[string]any{"tags": tags, "attribute_filter": sub.Filter}).Error; err != nil {
					return fmt.Errorf("update subscription tags and filter: %w", err)
				}
				continue
			}
			if err := tx.db.Create(&subscriptionRow{GroupID: g.ID, TopicID: sub.TopicID, Tags: tags, AttributeFilter: sub.Filter}).Error; err != nil {
				return fmt.Errorf("insert subscription: %w", err)
			}
			if err := tx.cursorsCreate(ctx, g.ID, topics[sub.TopicID], g.ConsumeFrom, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// maxThrottles is n, or the default (models.DefaultMaxThrottles) when zero.
func maxThrottles(n int) int {
	if n == 0 {
		return models.DefaultMaxThrottles
	}
	return n
}

// dlRetention is h, or the default 336 h when zero.
func dlRetention(h int) int {
	if h == 0 {
		return models.DefaultDeadLetterRetentionHours
	}
	return h
}

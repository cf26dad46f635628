package store

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

type topicRow struct {
	ID        int64 `gorm:"primaryKey"`
	Name      string
	NodeID    int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (topicRow) TableName() string { return "topics" }

type queueRow struct {
	ID        int64 `gorm:"primaryKey"`
	TopicID   int64
	NodeID    int64
	Position  int
	State     string
	CreatedAt time.Time
}

func (queueRow) TableName() string { return "queues" }

// queueDDL is the one fixed shape of every queue table (DESIGN §3). The table name is
// built from the queue's numeric id only. Tag and key are VARBINARY so they are stored
// byte-exact; created_at is Unix ms.
const queueDDL = `CREATE TABLE IF NOT EXISTS %s (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  tag VARBINARY(255) NOT NULL DEFAULT '',
  msg_key VARBINARY(255) NOT NULL DEFAULT '',
  headers JSON NULL,
  body LONGBLOB NOT NULL,
  content_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  trace_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  producer_ip VARCHAR(45) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
  KEY idx_created_at (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`

// TopicCreate creates topic name with n queues on node 1, each with its queue table.
// It returns ErrConflict when the name is taken and ErrInvalid for a bad name, a
// reserved `.dlq` name or n outside [1, MaxQueuesPerTopic].
func (s *Store) TopicCreate(ctx context.Context, name string, n int) (*models.Topic, error) {
	return s.topicCreate(ctx, name, n, false)
}

// TopicCreateReserved is TopicCreate for Herald's own dead-letter topics, which may
// end with `.dlq`.
func (s *Store) TopicCreateReserved(ctx context.Context, name string, n int) (*models.Topic, error) {
	return s.topicCreate(ctx, name, n, true)
}

func (s *Store) topicCreate(ctx context.Context, name string, n int, reserved bool) (*models.Topic, error) {
	var v models.ValidationError
	if !models.ValidName(name) {
		v.Add("/name", "must match ^[a-z0-9][a-z0-9._-]{0,119}$")
	} else if models.ReservedName(name) && !reserved {
		v.Add("/name", "the .dlq suffix is reserved for dead-letter topics")
	}
	if n < 1 || n > models.MaxQueuesPerTopic {
		v.Add("/queues", fmt.Sprintf("must be between 1 and %d", models.MaxQueuesPerTopic))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	tr := topicRow{Name: name, NodeID: 1, CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	var qs []queueRow
	err := s.WithTx(ctx, func(tx *Store) error {
		if err := tx.db.Create(&tr).Error; err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("topic %q: %w", name, models.ErrConflict)
			}
			return fmt.Errorf("insert topic: %w", err)
		}
		qs = make([]queueRow, n)
		for i := range qs {
			qs[i] = queueRow{TopicID: tr.ID, NodeID: 1, Position: i, State: string(models.QueueReadWrite), CreatedAt: tr.CreatedAt}
		}
		if err := tx.db.Create(&qs).Error; err != nil {
			return fmt.Errorf("insert queues: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if _, err := s.sql.ExecContext(ctx, fmt.Sprintf(queueDDL, models.QueueTableName(q.ID))); err != nil {
			s.db.WithContext(ctx).Where("topic_id = ?", tr.ID).Delete(&queueRow{})
			s.db.WithContext(ctx).Delete(&tr)
			return nil, fmt.Errorf("create queue table %d: %w", q.ID, err)
		}
	}
	return toTopic(tr, qs), nil
}

func toTopic(tr topicRow, qs []queueRow) *models.Topic {
	t := &models.Topic{ID: tr.ID, Name: tr.Name, NodeID: tr.NodeID, CreatedAt: tr.CreatedAt}
	for _, q := range qs {
		t.Queues = append(t.Queues, models.Queue{ID: q.ID, TopicID: q.TopicID, NodeID: q.NodeID, Position: q.Position, State: models.QueueState(q.State)})
	}
	return t
}

// TopicGetByName returns the topic with its queues ordered by position, or ErrNotFound
// (also, without a query, for a name models.PossibleName refuses).
func (s *Store) TopicGetByName(ctx context.Context, name string) (*models.Topic, error) {
	if !models.PossibleName(name) {
		return nil, fmt.Errorf("topic %q: %w", name, models.ErrNotFound)
	}
	var tr topicRow
	if err := s.db.WithContext(ctx).Where("name = ?", name).Take(&tr).Error; err != nil {
		return nil, notFound(err, "topic "+name)
	}
	var qs []queueRow
	if err := s.db.WithContext(ctx).Where("topic_id = ?", tr.ID).Order("position").Find(&qs).Error; err != nil {
		return nil, fmt.Errorf("read queues of %s: %w", name, err)
	}
	return toTopic(tr, qs), nil
}

// TopicList returns up to limit topics with id > after, ordered by id, with their queues.
func (s *Store) TopicList(ctx context.Context, after int64, limit int) ([]*models.Topic, error) {
	var trs []topicRow
	if err := s.db.WithContext(ctx).Where("id > ?", after).Order("id").Limit(limit).Find(&trs).Error; err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	out := make([]*models.Topic, 0, len(trs))
	if len(trs) == 0 {
		return out, nil
	}
	ids := make([]int64, len(trs))
	for i, t := range trs {
		ids[i] = t.ID
	}
	var qs []queueRow
	if err := s.db.WithContext(ctx).Where("topic_id IN ?", ids).Order("topic_id, position").Find(&qs).Error; err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	byTopic := map[int64][]queueRow{}
	for _, q := range qs {
		byTopic[q.TopicID] = append(byTopic[q.TopicID], q)
	}
	for _, t := range trs {
		out = append(out, toTopic(t, byTopic[t.ID]))
	}
	return out, nil
}

// QueueTopics maps every queue id to its topic name, for workers' herald-topic header.
func (s *Store) QueueTopics(ctx context.Context) (map[int64]string, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT q.id, t.name FROM queues q JOIN topics t ON t.id = q.topic_id")
	if err != nil {
		return nil, fmt.Errorf("read queue topics: %w", err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = name
	}
	return out, rows.Err()
}

// QueueTopicIDs maps every queue id to its topic id.
func (s *Store) QueueTopicIDs(ctx context.Context) (map[int64]int64, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT id, topic_id FROM queues")
	if err != nil {
		return nil, fmt.Errorf("read queue topics: %w", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var q, t int64
		if err := rows.Scan(&q, &t); err != nil {
			return nil, err
		}
		out[q] = t
	}
	return out, rows.Err()
}

// QueueSetState makes a queue read-write or read-only (PMQ's queue states).
func (s *Store) QueueSetState(ctx context.Context, queueID int64, st models.QueueState) error {
	_, err := s.sql.ExecContext(ctx, "UPDATE queues SET state = ? WHERE id = ?", string(st), queueID)
	if err != nil {
		return fmt.Errorf("set queue %d state: %w", queueID, err)
	}
	return nil
}

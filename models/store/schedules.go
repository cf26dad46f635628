package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

const scheduleColumns = "s.id, s.name, s.topic_id, COALESCE(t.name, ''), s.cron_expr, s.timezone, s.tag, s.msg_key, s.headers, s.body, s.content_type, s.paused, s.next_run_ms, s.last_run_ms, s.runs, s.created_by, s.created_at"

const scheduleFrom = " FROM schedules s LEFT JOIN topics t ON t.id = s.topic_id"

// ScheduleCreate stores sc (its Name, TopicID, Cron, Timezone, Message, Paused,
// NextRun and CreatedBy) and fills it as stored (ID, Topic, CreatedAt). It holds
// a shared lock on the topic's row while it writes, so a concurrent topic delete
// either finds the schedule and deletes it or has already removed the topic. A
// taken name fails with models.ErrConflict, a topic deleted meanwhile with
// models.ErrNotFound.
func (s *Store) ScheduleCreate(ctx context.Context, sc *models.Schedule) error {
	m := sc.Message
	return s.scheduleWrite(ctx, sc, func(tx txConn) (int64, error) {
		res, err := tx.ExecContext(ctx, `INSERT INTO schedules (name, topic_id, cron_expr, timezone, tag, msg_key, headers, body, content_type, paused, next_run_ms, created_by)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
			sc.Name, sc.TopicID, sc.Cron, sc.Timezone, []byte(m.Tag), []byte(m.Key), headersJSON(m.Headers), m.Body, m.ContentType, sc.Paused, sc.NextRun.UnixMilli(), sc.CreatedBy)
		if isDuplicate(err) {
			return 0, fmt.Errorf("schedule %s: %w", sc.Name, models.ErrConflict)
		}
		if err != nil {
			return 0, fmt.Errorf("create schedule: %w", err)
		}
		return res.LastInsertId()
	})
}

// scheduleWrite runs write (which returns the written schedule's id) in a
// transaction holding a shared lock on sc's topic row, and fills sc with the row as
// stored before the commit. models.ErrNotFound when the topic is gone.
func (s *Store) scheduleWrite(ctx context.Context, sc *models.Schedule, write func(tx txConn) (int64, error)) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin writing schedule %s: %w", sc.Name, err)
	}
	defer tx.Rollback()
	var topic int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM topics WHERE id = ? LOCK IN SHARE MODE", sc.TopicID).Scan(&topic); err != nil {
		return notFound(err, fmt.Sprintf("topic %d of schedule %s", sc.TopicID, sc.Name))
	}
	id, err := write(tx)
	if err != nil {
		return err
	}
	got, err := scanSchedule(tx.QueryRowContext(ctx, "SELECT "+scheduleColumns+scheduleFrom+" WHERE s.id = ?", id))
	if err != nil {
		return notFound(err, "schedule "+sc.Name)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit schedule %s: %w", sc.Name, err)
	}
	*sc = got
	return nil
}

// ScheduleGet returns the schedule called name with its topic's name, or
// models.ErrNotFound.
func (s *Store) ScheduleGet(ctx context.Context, name string) (*models.Schedule, error) {
	sc, err := scanSchedule(s.sql.QueryRowContext(ctx, "SELECT "+scheduleColumns+scheduleFrom+" WHERE s.name = ?", name))
	if err != nil {
		return nil, notFound(err, "schedule "+name)
	}
	return &sc, nil
}

// ScheduleList returns up to limit schedules with ids above after, by id.
func (s *Store) ScheduleList(ctx context.Context, after int64, limit int) ([]*models.Schedule, error) {
	ss, err := s.scheduleQuery(ctx, " WHERE s.id > ? ORDER BY s.id LIMIT ?", after, limit)
	out := make([]*models.Schedule, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out, err
}

// SchedulePause pauses schedule name (paused true) or resumes it with its next
// tick at next (paused false), and returns it as stored. models.ErrNotFound for an
// unknown name.
func (s *Store) SchedulePause(ctx context.Context, name string, paused bool, next time.Time) (*models.Schedule, error) {
	var err error
	if paused {
		_, err = s.sql.ExecContext(ctx, "UPDATE schedules SET paused = 1 WHERE name = ?", name)
	} else {
		_, err = s.sql.ExecContext(ctx, "UPDATE schedules SET paused = 0, next_run_ms = ? WHERE name = ? AND paused = 1", next.UnixMilli(), name)
	}
	if err != nil {
		return nil, fmt.Errorf("pause or resume schedule %s: %w", name, err)
	}
	return s.ScheduleGet(ctx, name)
}

// ScheduleDelete deletes schedule name; a message it already parked for a tick is
// still delivered. models.ErrNotFound for an unknown name.
func (s *Store) ScheduleDelete(ctx context.Context, name string) error {
	res, err := s.sql.ExecContext(ctx, "DELETE FROM schedules WHERE name = ?", name)
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete schedule %s: %w", name, err)
	} else if n == 0 {
		return fmt.Errorf("schedule %s: %w", name, models.ErrNotFound)
	}
	return nil
}

// SchedulesDue returns up to limit schedules not paused whose next tick is at or
// before now, earliest first.
func (s *Store) SchedulesDue(ctx context.Context, now time.Time, limit int) ([]models.Schedule, error) {
	return s.scheduleQuery(ctx, " WHERE s.paused = 0 AND s.next_run_ms <= ? ORDER BY s.next_run_ms, s.id LIMIT ?", now.UnixMilli(), limit)
}

// scheduleQuery reads the schedules that where (a WHERE clause with its order and
// limit, on alias s) selects, with their topics' names.
func (s *Store) scheduleQuery(ctx context.Context, where string, args ...any) ([]models.Schedule, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT "+scheduleColumns+scheduleFrom+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}
	defer rows.Close()
	var out []models.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("scan schedule: %w", err)
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

// ScheduleNext returns the earliest next tick of any schedule not paused, and
// false when none is active.
func (s *Store) ScheduleNext(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	if err := s.sql.QueryRowContext(ctx, "SELECT MIN(next_run_ms) FROM schedules WHERE paused = 0").Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("read the next schedule tick: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(at.Int64).UTC(), true, nil
}

// ScheduleFire publishes sc's tick (sc.NextRun, as read): in one transaction it
// moves next_run_ms on to next, only if it still holds that tick and sc is not
// paused, and then parks sc's message in delayed_messages due at the tick, with
// the headers models.HeaderSchedule and HeaderScheduleTick added, for the
// delayed-message mover to put into the topic. It returns false, having stored
// nothing, when another process fired the tick first or sc was paused, changed
// or deleted meanwhile: one message per tick, however many processes try.
func (s *Store) ScheduleFire(ctx context.Context, sc *models.Schedule, next time.Time) (bool, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return false, fmt.Errorf("begin firing schedule %s: %w", sc.Name, err)
	}
	defer tx.Rollback()
	tick := sc.NextRun.UnixMilli()
	res, err := tx.ExecContext(ctx, "UPDATE schedules SET next_run_ms = ?, last_run_ms = ?, runs = runs + 1 WHERE id = ? AND next_run_ms = ? AND paused = 0",
		next.UnixMilli(), tick, sc.ID, tick)
	if err != nil {
		return false, fmt.Errorf("move schedule %s on: %w", sc.Name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	m := sc.Message
	h := make(map[string]string, len(m.Headers)+2)
	for k, v := range m.Headers {
		h[k] = v
	}
	h[models.HeaderSchedule] = sc.Name
	h[models.HeaderScheduleTick] = sc.NextRun.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if _, err := tx.ExecContext(ctx, "INSERT INTO delayed_messages ("+delayedColumns+") VALUES (?,?,?,?,?,?,?,?,?,?)",
		sc.TopicID, tick, []byte(m.Tag), []byte(m.Key), headersJSON(h), m.Body, m.ContentType, "", tick, ""); err != nil {
		return false, fmt.Errorf("park schedule %s's message: %w", sc.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit schedule %s's tick: %w", sc.Name, err)
	}
	return true, nil
}

// scanSchedule reads one row of scheduleColumns from a *sql.Row or *sql.Rows.
func scanSchedule(rows interface{ Scan(...any) error }) (models.Schedule, error) {
	var sc models.Schedule
	var tag, key []byte
	var headers sql.NullString
	var next int64
	var last sql.NullInt64
	if err := rows.Scan(&sc.ID, &sc.Name, &sc.TopicID, &sc.Topic, &sc.Cron, &sc.Timezone, &tag, &key, &headers, &sc.Message.Body,
		&sc.Message.ContentType, &sc.Paused, &next, &last, &sc.Runs, &sc.CreatedBy, &sc.CreatedAt); err != nil {
		return sc, err
	}
	sc.Message.Tag, sc.Message.Key = string(tag), string(key)
	if headers.Valid {
		_ = json.Unmarshal([]byte(headers.String), &sc.Message.Headers)
	}
	sc.NextRun = time.UnixMilli(next).UTC()
	if last.Valid {
		sc.LastRun = time.UnixMilli(last.Int64).UTC()
	}
	sc.CreatedAt = sc.CreatedAt.UTC()
	return sc, nil
}

// ScheduleUpdate writes sc's topic, expression, time zone, message and next tick
// over the stored schedule sc.ID (its name, state, runs and creator stay) and
// returns it as stored, under the same topic lock as ScheduleCreate. A tick the
// leader is firing from the old next tick at the same time fails its
// compare-and-set when the next tick changed. Errors: models.ErrNotFound when the
// schedule or its new topic was deleted meanwhile.
func (s *Store) ScheduleUpdate(ctx context.Context, sc *models.Schedule) (*models.Schedule, error) {
	m := sc.Message
	out := *sc
	err := s.scheduleWrite(ctx, &out, func(tx txConn) (int64, error) {
		_, err := tx.ExecContext(ctx, `UPDATE schedules SET topic_id = ?, cron_expr = ?, timezone = ?, tag = ?, msg_key = ?, headers = ?, body = ?,
			content_type = ?, next_run_ms = ? WHERE id = ?`,
			sc.TopicID, sc.Cron, sc.Timezone, []byte(m.Tag), []byte(m.Key), headersJSON(m.Headers), m.Body, m.ContentType, sc.NextRun.UnixMilli(), sc.ID)
		if err != nil {
			return 0, fmt.Errorf("update schedule %s: %w", sc.Name, err)
		}
		return sc.ID, nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

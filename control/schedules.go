package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/models"
)

// ScheduleSpec is a schedule to create: Name (a topic-style name), the Topic it
// publishes to, Cron and Timezone (models.ParseCron; empty Timezone: UTC), the
// message each tick publishes (Message's Body, ContentType, Tag and Key, with
// Headers given apart, as a publish gives them) and whether it starts Paused.
type ScheduleSpec struct {
	Name     string
	Topic    string
	Cron     string
	Timezone string
	Message  models.Message
	Headers  map[string]string
	Paused   bool
}

// CreateSchedule stores a schedule that publishes spec's message to its topic on
// every tick (the maintenance leader fires it; models.Schedule) and wakes the
// leader for its first tick. Audited as schedule.create. Errors: a
// *models.ValidationError naming each bad field, models.ErrConflict for a taken
// name, the store's otherwise.
func (c *Control) CreateSchedule(ctx context.Context, a Actor, spec ScheduleSpec) (*models.Schedule, error) {
	var v models.ValidationError
	if !models.ValidName(spec.Name) {
		v.Add("/name", "must match ^[a-z0-9][a-z0-9._-]{0,119}$")
	}
	sc, cr, err := c.checkSchedule(ctx, spec, &v)
	if err != nil {
		return nil, err
	}
	sc.Paused, sc.NextRun, sc.CreatedBy = spec.Paused, cr.Next(time.Now()), a.Username
	if err := c.st.ScheduleCreate(ctx, sc); err != nil {
		return nil, c.topicGone(ctx, sc, err)
	}
	c.Record(ctx, a, "schedule.create", sc.Name, nil, recordOfSchedule(sc))
	if !sc.Paused {
		c.wakeScheduler(ctx, sc.NextRun)
	}
	return sc, nil
}

// UpdateSchedule replaces schedule name's topic, expression, time zone and message
// with spec's (spec.Name and spec.Paused are not used: pause and resume are their
// own actions). A new expression or zone starts from its first tick after now;
// otherwise the next tick stays. Audited as schedule.update. Errors: as
// CreateSchedule, and models.ErrNotFound.
func (c *Control) UpdateSchedule(ctx context.Context, a Actor, name string, spec ScheduleSpec) (*models.Schedule, error) {
	before, err := c.st.ScheduleGet(ctx, name)
	if err != nil {
		return nil, err
	}
	var v models.ValidationError
	sc, cr, err := c.checkSchedule(ctx, spec, &v)
	if err != nil {
		return nil, err
	}
	sc.ID, sc.Name, sc.NextRun = before.ID, before.Name, before.NextRun
	retimed := sc.Cron != before.Cron || sc.Timezone != before.Timezone
	if retimed {
		sc.NextRun = cr.Next(time.Now())
	}
	after, err := c.st.ScheduleUpdate(ctx, sc)
	if err != nil {
		return nil, c.topicGone(ctx, sc, err)
	}
	c.Record(ctx, a, "schedule.update", name, recordOfSchedule(before), recordOfSchedule(after))
	if retimed && !after.Paused {
		c.wakeScheduler(ctx, after.NextRun)
	}
	return after, nil
}

// topicGone turns err, a store error writing sc, into a 422 on /topic when it
// failed because sc's topic was deleted meanwhile; any other error is returned
// as it is.
func (c *Control) topicGone(ctx context.Context, sc *models.Schedule, err error) error {
	if !errors.Is(err, models.ErrNotFound) {
		return err
	}
	if _, terr := c.st.TopicGetByID(ctx, sc.TopicID); errors.Is(terr, models.ErrNotFound) {
		return invalid("/topic", "no topic named "+sc.Topic+": it was deleted")
	}
	return err
}

// checkSchedule validates spec's topic, expression, zone and message, adding each
// problem to v, and returns the schedule they make (spec's name; no state or next
// tick yet) with its parsed expression. Errors: v when it holds any problem, the
// store's otherwise.
func (c *Control) checkSchedule(ctx context.Context, spec ScheduleSpec, v *models.ValidationError) (*models.Schedule, models.Cron, error) {
	if spec.Timezone == "" {
		spec.Timezone = "UTC"
	}
	cr, err := models.ParseCron(spec.Cron, spec.Timezone)
	var cv *models.ValidationError
	if errors.As(err, &cv) {
		v.Errors = append(v.Errors, cv.Errors...)
	}
	msg := spec.Message
	msg.Headers = nil
	switch {
	case len(msg.Body) == 0:
		v.Add("/body", "body or body_base64 is required")
	case len(msg.Body) > models.MaxMessageBytes:
		v.Add("/body", fmt.Sprintf("is %d bytes; messages are limited to %d", len(msg.Body), models.MaxMessageBytes))
	}
	if msg.ContentType == "" {
		msg.ContentType = "application/json"
	}
	models.CheckMessageFields("", &msg, spec.Headers, v)
	var t *models.Topic
	if spec.Topic == "" || models.ReservedName(spec.Topic) {
		v.Add("/topic", "the name of a topic (not a dead-letter topic) is required")
	} else if t, err = c.st.TopicGetByName(ctx, spec.Topic); errors.Is(err, models.ErrNotFound) {
		v.Add("/topic", "no topic named "+spec.Topic)
	} else if err != nil {
		return nil, cr, err
	}
	if err := v.Err(); err != nil {
		return nil, cr, err
	}
	return &models.Schedule{Name: spec.Name, TopicID: t.ID, Topic: t.Name, Cron: spec.Cron, Timezone: spec.Timezone, Message: msg}, cr, nil
}

// GetSchedule returns schedule name. Errors: models.ErrNotFound.
func (c *Control) GetSchedule(ctx context.Context, name string) (*models.Schedule, error) {
	return c.st.ScheduleGet(ctx, name)
}

// ListSchedules returns a page of schedules, oldest first.
func (c *Control) ListSchedules(ctx context.Context, p PageRequest) (Page[*models.Schedule], error) {
	ss, err := c.st.ScheduleList(ctx, p.After, p.Limit)
	if err != nil {
		return Page[*models.Schedule]{}, err
	}
	return pageOf(ss, p.Limit, func(s *models.Schedule) int64 { return s.ID }), nil
}

// PauseSchedule stops schedule name from firing; the ticks that fall while it is
// paused are skipped. Pausing a paused schedule changes nothing. Audited as
// schedule.pause. Errors: models.ErrNotFound.
func (c *Control) PauseSchedule(ctx context.Context, a Actor, name string) (*models.Schedule, error) {
	sc, err := c.st.SchedulePause(ctx, name, true, time.Time{})
	if err != nil {
		return nil, err
	}
	c.Record(ctx, a, "schedule.pause", name, nil, recordOfSchedule(sc))
	return sc, nil
}

// ResumeSchedule lets a paused schedule fire again from its first tick after now
// (the ticks it missed while paused are not published); a running schedule is
// left as it is. Audited as schedule.resume. Errors: models.ErrNotFound.
func (c *Control) ResumeSchedule(ctx context.Context, a Actor, name string) (*models.Schedule, error) {
	sc, err := c.st.ScheduleGet(ctx, name)
	if err != nil {
		return nil, err
	}
	if !sc.Paused {
		return sc, nil
	}
	cr, err := models.ParseCron(sc.Cron, sc.Timezone)
	if err != nil {
		return nil, err
	}
	if sc, err = c.st.SchedulePause(ctx, name, false, cr.Next(time.Now())); err != nil {
		return nil, err
	}
	c.Record(ctx, a, "schedule.resume", name, nil, recordOfSchedule(sc))
	c.wakeScheduler(ctx, sc.NextRun)
	return sc, nil
}

// DeleteSchedule deletes schedule name: it fires no more (a tick it already
// published is still delivered). Audited as schedule.delete. Errors:
// models.ErrNotFound.
func (c *Control) DeleteSchedule(ctx context.Context, a Actor, name string) error {
	sc, err := c.st.ScheduleGet(ctx, name)
	if err != nil {
		return err
	}
	if err := c.st.ScheduleDelete(ctx, name); err != nil {
		return err
	}
	c.Record(ctx, a, "schedule.delete", name, recordOfSchedule(sc), nil)
	return nil
}

// ScheduleUpcoming returns sc's next n ticks (none while it is paused).
func ScheduleUpcoming(sc *models.Schedule, n int) []time.Time {
	if sc.Paused {
		return nil
	}
	cr, err := models.ParseCron(sc.Cron, sc.Timezone)
	if err != nil {
		return nil
	}
	return cr.Upcoming(sc.NextRun, n)
}

// wakeScheduler tells the maintenance leader of a tick at next, which may be
// earlier than its next pass. A hint: a lost one costs at most the leader's idle
// re-check (one minute).
func (c *Control) wakeScheduler(ctx context.Context, next time.Time) {
	if err := c.notifier.Delayed(context.WithoutCancel(ctx), next); err != nil {
		c.log.Warn("notify the maintenance leader of a schedule; it finds it at its next check", "err", err)
	}
}

// recordOfSchedule is a schedule as the audit log keeps it (its body by size only).
func recordOfSchedule(sc *models.Schedule) map[string]any {
	return map[string]any{"topic": sc.Topic, "cron": sc.Cron, "timezone": sc.Timezone, "paused": sc.Paused,
		"tag": sc.Message.Tag, "key": sc.Message.Key, "body_bytes": len(sc.Message.Body), "next_run": sc.NextRun}
}

package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// failureRoutes adds dead letters and group stats (DESIGN §5, §6).
func (s *Server) failureRoutes(admin *echo.Group) {
	admin.GET("/groups/:group/dead-letters", s.deadLetterList)
	admin.GET("/groups/:group/dead-letters/:id", s.deadLetterGet)
	admin.POST("/groups/:group/dead-letters/redrive", s.deadLetterRedrive, requireRole(models.RoleOperator))
	admin.POST("/groups/:group/dead-letters/purge", s.deadLetterPurge, requireRole(models.RoleOperator))
	admin.GET("/groups/:group/stats", s.groupStats)
}

// DeadLetterDTO is a dead letter as the admin API shows it. DLQOffset is the offset
// of its copy on the group's dead-letter topic `<group>.dlq` (null until appended; 0
// when not appended because the message came through a dead-letter topic).
type DeadLetterDTO struct {
	ID         int64                `json:"id"`
	MessageID  string               `json:"message_id"`
	Queue      int64                `json:"queue"`
	Offset     int64                `json:"offset"`
	Attempts   int                  `json:"attempts"`
	LastStatus int                  `json:"last_status"`
	LastError  string               `json:"last_error"`
	State      string               `json:"state"`
	DLQTopic   string               `json:"dlq_topic"`
	DLQOffset  *int64               `json:"dlq_offset"`
	CreatedAt  string               `json:"created_at"`
	UpdatedAt  string               `json:"updated_at"`
	Delivery   []DeliveryAttemptDTO `json:"delivery_attempts,omitempty"`
}

// DeliveryAttemptDTO is one recorded POST of a message: status (0 when none),
// error_class for failures, latency_ms, and the start of a failed response body.
type DeliveryAttemptDTO struct {
	WebhookID       string `json:"webhook_id"`
	Attempt         int    `json:"attempt"`
	Status          int    `json:"status"`
	ErrorClass      string `json:"error_class"`
	LatencyMS       int    `json:"latency_ms"`
	ResponseExcerpt string `json:"response_excerpt"`
	At              string `json:"at"`
}

// AttemptDTOs converts delivery attempts for responses.
func AttemptDTOs(as []models.DeliveryAttempt) []DeliveryAttemptDTO {
	out := make([]DeliveryAttemptDTO, 0, len(as))
	for _, a := range as {
		out = append(out, DeliveryAttemptDTO{WebhookID: a.WebhookID, Attempt: a.Attempt, Status: a.Status, ErrorClass: a.ErrorClass,
			LatencyMS: a.LatencyMS, ResponseExcerpt: string(a.Excerpt), At: a.CreatedAt.UTC().Format(timeFormat)})
	}
	return out
}

func deadLetterDTO(g *models.Group, d models.DeadLetter) DeadLetterDTO {
	return DeadLetterDTO{ID: d.ID, MessageID: models.MessageID(d.QueueID, d.Offset), Queue: d.QueueID, Offset: d.Offset,
		Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: d.LastError, State: string(d.State),
		DLQTopic: g.Name + models.DeadLetterSuffix, DLQOffset: d.DLQOffset,
		CreatedAt: d.CreatedAt.UTC().Format(timeFormat), UpdatedAt: d.UpdatedAt.UTC().Format(timeFormat)}
}

func (s *Server) deadLetterList(c echo.Context) error {
	ctx := c.Request().Context()
	g, err := s.st.GroupGetByName(ctx, c.Param("group"))
	if err != nil {
		return err
	}
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	f := store.DeadLetterFilter{GroupID: g.ID, State: models.DeadLetterState(c.QueryParam("state"))}
	if f.State != "" && !validDeadLetterState(f.State) {
		return problem("validation", "state must be pending, redriven or purged")
	}
	ds, err := s.st.DeadLetterList(ctx, f, after, limit)
	if err != nil {
		return err
	}
	out := listResponse[DeadLetterDTO]{Items: []DeadLetterDTO{}}
	for _, d := range ds {
		out.Items = append(out.Items, deadLetterDTO(g, d))
	}
	if len(ds) > 0 {
		out.NextCursor = nextCursor(ds[len(ds)-1].ID, len(ds), limit)
	}
	return c.JSON(http.StatusOK, out)
}

func validDeadLetterState(st models.DeadLetterState) bool {
	for _, x := range models.DeadLetterStates() {
		if x == st {
			return true
		}
	}
	return false
}

func (s *Server) deadLetterGet(c echo.Context) error {
	ctx := c.Request().Context()
	g, err := s.st.GroupGetByName(ctx, c.Param("group"))
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return problem("not-found", "no dead letter "+c.Param("id"))
	}
	d, err := s.st.DeadLetterGet(ctx, g.ID, id)
	if err != nil {
		return err
	}
	as, err := s.st.AttemptsByMessage(ctx, d.QueueID, d.Offset)
	if err != nil {
		return err
	}
	dto := deadLetterDTO(g, *d)
	var mine []models.DeliveryAttempt
	for _, a := range as {
		if a.GroupID == g.ID {
			mine = append(mine, a)
		}
	}
	dto.Delivery = AttemptDTOs(mine)
	return c.JSON(http.StatusOK, dto)
}

// deadLetterSelection picks dead letters by ids and/or a created_at range
// [from, to) (RFC 3339); an empty body selects every pending one.
type deadLetterSelection struct {
	IDs  []int64 `json:"ids"`
	From string  `json:"from"`
	To   string  `json:"to"`
}

func (s *Server) deadLetterFilter(c echo.Context) (*models.Group, store.DeadLetterFilter, error) {
	var f store.DeadLetterFilter
	g, err := s.st.GroupGetByName(c.Request().Context(), c.Param("group"))
	if err != nil {
		return nil, f, err
	}
	f.GroupID = g.ID
	var sel deadLetterSelection
	if c.Request().ContentLength != 0 {
		body, err := readBody(c, 1<<20)
		if err != nil {
			return nil, f, err
		}
		if len(body) > 0 {
			if err := decodeStrict(body, &sel); err != nil {
				return nil, f, err
			}
		}
	}
	var v models.ValidationError
	f.IDs = sel.IDs
	for _, p := range []struct {
		raw string
		dst *time.Time
		ptr string
	}{{sel.From, &f.From, "/from"}, {sel.To, &f.To, "/to"}} {
		if p.raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, p.raw)
		if err != nil {
			v.Add(p.ptr, "must be an RFC 3339 time")
		}
		*p.dst = t
	}
	return g, f, v.Err()
}

func (s *Server) deadLetterRedrive(c echo.Context) error {
	g, f, err := s.deadLetterFilter(c)
	if err != nil {
		return err
	}
	n, err := s.st.DeadLetterRedrive(c.Request().Context(), f)
	if err != nil {
		return err
	}
	_ = s.notifier.Group(context.WithoutCancel(c.Request().Context()), g.ID)
	s.audit(c, "dead_letters.redrive", g.Name, nil, map[string]any{"count": n, "ids": f.IDs, "from": f.From, "to": f.To})
	return c.JSON(http.StatusOK, map[string]int64{"redriven": n})
}

func (s *Server) deadLetterPurge(c echo.Context) error {
	g, f, err := s.deadLetterFilter(c)
	if err != nil {
		return err
	}
	n, err := s.st.DeadLetterPurge(c.Request().Context(), f)
	if err != nil {
		return err
	}
	s.audit(c, "dead_letters.purge", g.Name, nil, map[string]any{"count": n, "ids": f.IDs})
	return c.JSON(http.StatusOK, map[string]int64{"purged": n})
}

// GroupStatsDTO is a group's delivery health (DESIGN §5): lag in messages and
// seconds, in-flight POSTs, effective rate (messages/s; 0 = the configured rate),
// failure counters, breaker state, and retry and dead-letter sizes.
type GroupStatsDTO struct {
	Group               string  `json:"group"`
	Status              string  `json:"status"`
	PausedReason        string  `json:"paused_reason"`
	LagMessages         int64   `json:"lag_messages"`
	LagSeconds          float64 `json:"lag_seconds"`
	RateLimit           int     `json:"rate_limit"`
	EffectiveRate       float64 `json:"effective_rate"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	SuccessesMinute     int     `json:"successes_last_minute"`
	FailuresMinute      int     `json:"failures_last_minute"`
	LastStatus          int     `json:"last_status"`
	LastError           string  `json:"last_error"`
	LastSuccessAt       *string `json:"last_success_at"`
	FailingSince        *string `json:"failing_since"`
	ThrottledUntil      *string `json:"throttled_until"`
	Breaker             string  `json:"breaker"`
	BreakerOpenUntil    *string `json:"breaker_open_until"`
	RetryMessages       int64   `json:"retry_messages"`
	DeadLetters         int64   `json:"dead_letters_pending"`
}

func fmtTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(timeFormat)
	return &s
}

func (s *Server) groupStats(c echo.Context) error {
	ctx := c.Request().Context()
	g, err := s.st.GroupGetByName(ctx, c.Param("group"))
	if err != nil {
		return err
	}
	h, err := s.st.GroupHealthGet(ctx, g.ID)
	if err != nil {
		return err
	}
	retries, err := s.st.RetryCount(ctx, g.ID)
	if err != nil {
		return err
	}
	dead, err := s.st.DeadLetterCount(ctx, g.ID)
	if err != nil {
		return err
	}
	lagMsgs, lagSecs, err := s.st.GroupLag(ctx, g.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, GroupStatsDTO{Group: g.Name, Status: string(g.Status), PausedReason: g.PausedReason,
		LagMessages: lagMsgs, LagSeconds: lagSecs, RateLimit: g.RateLimit, EffectiveRate: h.EffectiveRate,
		ConsecutiveFailures: h.ConsecutiveFailures, SuccessesMinute: h.SuccessesMinute, FailuresMinute: h.FailuresMinute,
		LastStatus: h.LastStatus, LastError: h.LastError, LastSuccessAt: fmtTime(h.LastSuccessAt), FailingSince: fmtTime(h.FailingSince),
		ThrottledUntil: fmtTime(h.ThrottledUntil), Breaker: h.BreakerState, BreakerOpenUntil: fmtTime(h.BreakerOpenUntil),
		RetryMessages: retries, DeadLetters: dead})
}

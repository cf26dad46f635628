package api

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
)

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// listPage reads ?limit= (default 50, max 500) and ?cursor= (an opaque id).
func listPage(c echo.Context) (after int64, limit int, err error) {
	limit = 50
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return 0, 0, problem("validation", "limit must be between 1 and 500")
		}
		limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err == nil {
			after, err = strconv.ParseInt(string(b), 10, 64)
		}
		if err != nil {
			return 0, 0, problem("validation", "cursor is not one this API returned")
		}
	}
	return after, limit, nil
}

func nextCursor(lastID int64, n, limit int) string {
	if n < limit {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(lastID, 10)))
}

type listResponse[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// TopicDTO is a topic as the admin API shows it.
// PublishedLastHour (messages) comes from the per-minute rollups.
type TopicDTO struct {
	ID                int64      `json:"id"`
	Name              string     `json:"name"`
	Queues            []QueueDTO `json:"queues"`
	PublishedLastHour int64      `json:"published_last_hour"`
	CreatedAt         string     `json:"created_at"`
}

// QueueDTO is one queue of a topic. MinOffset and MaxOffset are the lowest and
// highest offsets it holds (0 when empty), filled by reads of the admin API.
type QueueDTO struct {
	ID        int64  `json:"id"`
	Position  int    `json:"position"`
	State     string `json:"state"`
	Node      int64  `json:"node"`
	MinOffset int64  `json:"min_offset"`
	MaxOffset int64  `json:"max_offset"`
}

func topicDTO(t *models.Topic) TopicDTO {
	out := TopicDTO{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC().Format(timeFormat), Queues: []QueueDTO{}}
	for _, q := range t.Queues {
		out.Queues = append(out.Queues, QueueDTO{ID: q.ID, Position: q.Position, State: string(q.State), Node: q.NodeID})
	}
	return out
}

type topicCreateRequest struct {
	Name   string `json:"name"`
	Queues *int   `json:"queues"`
}

func (s *Server) topicCreate(c echo.Context) error {
	body, err := readBody(c, 64<<10)
	if err != nil {
		return err
	}
	var req topicCreateRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	n := 4
	if req.Queues != nil {
		n = *req.Queues
	}
	t, err := s.st.TopicCreate(c.Request().Context(), req.Name, n)
	if err != nil {
		return err
	}
	s.audit(c, "topic.create", t.Name, nil, topicDTO(t))
	return c.JSON(http.StatusCreated, topicDTO(t))
}

func (s *Server) topicGet(c echo.Context) error {
	t, err := s.st.TopicGetByName(c.Request().Context(), c.Param("topic"))
	if err != nil {
		return err
	}
	out := []TopicDTO{topicDTO(t)}
	if err := s.fillTopicStats(c.Request().Context(), out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out[0])
}

func (s *Server) topicList(c echo.Context) error {
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	ts, err := s.st.TopicList(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	out := listResponse[TopicDTO]{Items: []TopicDTO{}}
	for _, t := range ts {
		out.Items = append(out.Items, topicDTO(t))
	}
	if len(ts) > 0 {
		out.NextCursor = nextCursor(ts[len(ts)-1].ID, len(ts), limit)
	}
	if err := s.fillTopicStats(c.Request().Context(), out.Items); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// SubscriptionDTO is a group's binding to a topic; empty Tags means every tag.
type SubscriptionDTO struct {
	Topic string   `json:"topic"`
	Tags  []string `json:"tags"`
}

// GroupDTO is a consumer group as the admin API shows it. Units: *_ms in
// milliseconds, rate_limit in messages/s (0 = unlimited), retry_schedule in seconds.
type GroupDTO struct {
	ID            int64             `json:"id"`
	Name          string            `json:"name"`
	EndpointURL   string            `json:"endpoint_url"`
	Subscriptions []SubscriptionDTO `json:"subscriptions"`
	BatchSize     int               `json:"batch_size"`
	BatchMaxBytes int               `json:"batch_max_bytes"`
	BatchWindowMS int               `json:"batch_window_ms"`
	MaxInFlight   int               `json:"max_in_flight"`
	RateLimit     int               `json:"rate_limit"`
	TimeoutMS     int               `json:"timeout_ms"`
	MaxAttempts   int               `json:"max_attempts"`
	RetrySchedule []int             `json:"retry_schedule"`
	Ordered       bool              `json:"ordered"`
	ConsumeFrom   string            `json:"consume_from"`
	SigningSecret string            `json:"signing_secret"`
	Status        string            `json:"status"`
	PausedReason  string            `json:"paused_reason"`
	// PreviousSecretExpiresAt ends the overlap window of the last secret rotation, during
	// which the previous secret signs too (null when none is open).
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	ConfigVersion           int64   `json:"config_version"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
}

func groupDTO(g *models.Group) GroupDTO {
	out := GroupDTO{ID: g.ID, Name: g.Name, EndpointURL: g.EndpointURL, BatchSize: g.BatchSize, BatchMaxBytes: g.BatchMaxBytes,
		BatchWindowMS: g.BatchWindowMS, MaxInFlight: g.MaxInFlight, RateLimit: g.RateLimit, TimeoutMS: g.TimeoutMS,
		MaxAttempts: g.MaxAttempts, RetrySchedule: g.RetrySchedule, Ordered: g.Ordered, ConsumeFrom: g.ConsumeFrom,
		SigningSecret: g.SigningSecret, Status: string(g.Status), PausedReason: g.PausedReason,
		CreatedAt: g.CreatedAt.UTC().Format(timeFormat), UpdatedAt: g.UpdatedAt.UTC().Format(timeFormat), Subscriptions: []SubscriptionDTO{},
		ConfigVersion: g.ConfigVersion}
	if exp := g.PreviousSecretExpiresAt; exp != nil && g.PreviousSigningSecret != "" && time.Now().Before(*exp) {
		s := exp.UTC().Format(timeFormat)
		out.PreviousSecretExpiresAt = &s
	}
	for _, sub := range g.Subscriptions {
		tags := sub.Tags
		if tags == nil {
			tags = []string{}
		}
		out.Subscriptions = append(out.Subscriptions, SubscriptionDTO{Topic: sub.Topic, Tags: tags})
	}
	return out
}

type groupCreateRequest struct {
	Name          string            `json:"name"`
	EndpointURL   string            `json:"endpoint_url"`
	Subscriptions []SubscriptionDTO `json:"subscriptions"`
	BatchSize     *int              `json:"batch_size"`
	BatchMaxBytes *int              `json:"batch_max_bytes"`
	BatchWindowMS *int              `json:"batch_window_ms"`
	MaxInFlight   *int              `json:"max_in_flight"`
	RateLimit     *int              `json:"rate_limit"`
	TimeoutMS     *int              `json:"timeout_ms"`
	MaxAttempts   *int              `json:"max_attempts"`
	RetrySchedule []int             `json:"retry_schedule"`
	Ordered       bool              `json:"ordered"`
	ConsumeFrom   string            `json:"consume_from"`
}

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func (s *Server) groupCreate(c echo.Context) error {
	body, err := readBody(c, 256<<10)
	if err != nil {
		return err
	}
	var req groupCreateRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	g, err := s.createGroup(c, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, groupDTO(g))
}

// createGroup validates and stores a new group with a fresh signing secret, tells
// the dispatchers and audits it. Shared by the API and the console.
func (s *Server) createGroup(c echo.Context, req groupCreateRequest) (*models.Group, error) {
	ctx := c.Request().Context()
	g := &models.Group{
		Name: req.Name, EndpointURL: req.EndpointURL, SigningSecret: signing.NewSecret(),
		BatchSize: orDefault(req.BatchSize, models.DefaultBatchSize), BatchMaxBytes: orDefault(req.BatchMaxBytes, models.DefaultBatchMaxBytes),
		BatchWindowMS: orDefault(req.BatchWindowMS, 0), MaxInFlight: orDefault(req.MaxInFlight, models.DefaultMaxInFlight),
		RateLimit: orDefault(req.RateLimit, 0), TimeoutMS: orDefault(req.TimeoutMS, models.DefaultTimeoutMS),
		MaxAttempts: orDefault(req.MaxAttempts, models.DefaultMaxAttempts), RetrySchedule: req.RetrySchedule,
		Ordered: req.Ordered, ConsumeFrom: req.ConsumeFrom,
	}
	for _, sub := range req.Subscriptions {
		g.Subscriptions = append(g.Subscriptions, models.Subscription{Topic: sub.Topic, Tags: sub.Tags})
	}
	if g.ConsumeFrom == "" {
		g.ConsumeFrom = models.ConsumeLatest
	}
	if g.RetrySchedule == nil {
		g.RetrySchedule = models.DefaultRetrySchedule
	}
	g.Status = models.GroupRunning
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := s.checkEndpoint(c, g.EndpointURL); err != nil {
		return nil, err
	}
	if err := s.st.GroupCreate(ctx, g); err != nil {
		return nil, err
	}
	_ = s.notifier.Group(ctx, g.ID)
	s.audit(c, "group.create", g.Name, nil, redacted(groupDTO(g)))
	return g, nil
}

func redacted(g GroupDTO) GroupDTO {
	g.SigningSecret = "(redacted)"
	return g
}

func (s *Server) groupGet(c echo.Context) error {
	g, err := s.st.GroupGetByName(c.Request().Context(), c.Param("group"))
	if err != nil {
		return err
	}
	dto := groupDTO(g)
	if userFrom(c).Role == models.RoleViewer {
		dto.SigningSecret = ""
	} else {
		s.audit(c, "group.secret.read", g.Name, nil, nil)
	}
	return c.JSON(http.StatusOK, dto)
}

func (s *Server) groupList(c echo.Context) error {
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	gs, err := s.st.GroupList(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	out := listResponse[GroupDTO]{Items: []GroupDTO{}}
	for _, g := range gs {
		d := groupDTO(g)
		d.SigningSecret = ""
		out.Items = append(out.Items, d)
	}
	if len(gs) > 0 {
		out.NextCursor = nextCursor(gs[len(gs)-1].ID, len(gs), limit)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) groupPause(c echo.Context) error {
	return s.setStatus(c, models.GroupPaused, "paused by "+userFrom(c).Username)
}

func (s *Server) groupResume(c echo.Context) error { return s.setStatus(c, models.GroupRunning, "") }

func (s *Server) setStatus(c echo.Context, st models.GroupStatus, reason string) error {
	ctx := c.Request().Context()
	g, err := s.st.GroupGetByName(ctx, c.Param("group"))
	if err != nil {
		return err
	}
	if err := s.st.GroupSetStatus(ctx, g.ID, st, reason); err != nil {
		return err
	}
	_ = s.notifier.Group(ctx, g.ID)
	s.audit(c, "group."+string(st), g.Name, map[string]string{"status": string(g.Status)}, map[string]string{"status": string(st)})
	g, err = s.st.GroupGetByID(ctx, g.ID)
	if err != nil {
		return err
	}
	d := groupDTO(g)
	d.SigningSecret = ""
	return c.JSON(http.StatusOK, d)
}

type apiKeyCreateRequest struct {
	Name   string   `json:"name"`
	Topics []string `json:"topics"`
}

// APIKeyDTO is an API key; Key is present only in the response that created it.
type APIKeyDTO struct {
	ID         int64    `json:"id"`
	Name       string   `json:"name"`
	Key        string   `json:"key,omitempty"`
	Prefix     string   `json:"prefix"`
	Topics     []string `json:"topics"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
	RevokedAt  *string  `json:"revoked_at"`
}

func (s *Server) apiKeyCreate(c echo.Context) error {
	body, err := readBody(c, 64<<10)
	if err != nil {
		return err
	}
	var req apiKeyCreateRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	var v models.ValidationError
	if req.Name == "" || len(req.Name) > 120 || !models.ValidLabel(req.Name) {
		v.Add("/name", "names are 1 to 120 bytes without control characters")
	}
	if len(req.Topics) == 0 {
		v.Add("/topics", "list at least one topic name or pattern such as orders.*")
	}
	for i, p := range req.Topics {
		if !models.ValidTopicPattern(p) {
			v.Add("/topics/"+strconv.Itoa(i), "a topic name where * stands for any run of characters")
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	key, prefix, hash := NewAPIKey()
	k := &models.APIKey{Name: req.Name, Prefix: prefix, Hash: hash, Topics: req.Topics}
	if err := s.st.APIKeyCreate(c.Request().Context(), k); err != nil {
		return err
	}
	s.audit(c, "apikey.create", prefix, nil, map[string]any{"name": k.Name, "topics": k.Topics})
	return c.JSON(http.StatusCreated, APIKeyDTO{ID: k.ID, Name: k.Name, Key: key, Prefix: prefix, Topics: k.Topics, CreatedAt: k.CreatedAt.UTC().Format(timeFormat)})
}

func (s *Server) audit(c echo.Context, action, subject string, before, after any) {
	actor := "system"
	if u, ok := c.Get("user").(*models.User); ok {
		actor = u.Username
	}
	if err := s.st.AuditRecord(c.Request().Context(), actor, action, subject, c.RealIP(), before, after); err != nil {
		s.log.Warn("audit log write failed", "action", action, "err", err)
	}
}

package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// SubscriptionDTO is a group's binding to a topic; empty Tags means every tag and an
// empty Filter every message.
type SubscriptionDTO = control.SubscriptionSetting

// GroupDTO is a consumer group as the admin API shows it: its writable settings
// (control.GroupSettings, with their units) between its name and its state.
type GroupDTO struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	control.GroupSettings
	SigningSecret string `json:"signing_secret"`
	Status        string `json:"status"`
	PausedReason  string `json:"paused_reason"`
	// Unreadable, present only for a group whose stored secrets or endpoint auth
	// cannot be read back, says why; nothing is delivered for it (models.Group.Unreadable).
	Unreadable string `json:"unreadable,omitempty"`
	// PreviousSecretExpiresAt ends the overlap window of the last secret rotation, during
	// which the previous secret signs too (null when none is open).
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	ConfigVersion           int64   `json:"config_version"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
}

// groupDTO shows g; withSecret false blanks the signing secret (lists, viewers,
// actions other than create and rotate).
func groupDTO(g *models.Group, withSecret bool) GroupDTO {
	out := GroupDTO{ID: g.ID, Name: g.Name, GroupSettings: control.SettingsOf(g), Status: string(g.Status), PausedReason: g.PausedReason, Unreadable: g.Unreadable, ConfigVersion: g.ConfigVersion,
		CreatedAt: g.CreatedAt.UTC().Format(control.TimeFormat), UpdatedAt: g.UpdatedAt.UTC().Format(control.TimeFormat)}
	if withSecret {
		out.SigningSecret = g.SigningSecret
	}
	if exp := g.PreviousSecretExpiresAt; exp != nil && g.PreviousSigningSecret != "" && time.Now().Before(*exp) {
		s := exp.UTC().Format(control.TimeFormat)
		out.PreviousSecretExpiresAt = &s
	}
	return out
}

// groupCreateRequest is a new group; absent numbers take their defaults. A PATCH
// resolves to the same shape (merge_patch.go).
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
	// OrderedOnExhausted is dead_letter (default) or pause.
	OrderedOnExhausted string `json:"ordered_on_exhausted"`
	// Ordering is key (default for an ordered group) or queue; only with ordered.
	Ordering    string `json:"ordering"`
	ConsumeFrom string `json:"consume_from"`
	// DeadLetterRetentionHours is how long dead letters are kept (hours, default 336).
	DeadLetterRetentionHours *int `json:"dead_letter_retention_hours"`
	// MaxThrottles is how many throttles in a row make a message's failed attempt
	// (1 to 1,000, default 10).
	MaxThrottles *int `json:"max_throttles"`
	// PushAuth (null: off), EndpointHeaders and BasicAuth: see control.GroupSpec.
	PushAuth        *control.PushAuthSetting `json:"push_auth"`
	EndpointHeaders map[string]string        `json:"endpoint_headers"`
	BasicAuth       *models.BasicAuth        `json:"basic_auth"`
}

func (r groupCreateRequest) spec() control.GroupSpec {
	s := control.GroupSpec{Name: r.Name, EndpointURL: r.EndpointURL, BatchSize: r.BatchSize, BatchMaxBytes: r.BatchMaxBytes,
		BatchWindowMS: r.BatchWindowMS, MaxInFlight: r.MaxInFlight, RateLimit: r.RateLimit, TimeoutMS: r.TimeoutMS,
		MaxAttempts: r.MaxAttempts, RetrySchedule: r.RetrySchedule, Ordered: r.Ordered,
		OrderedOnExhausted: models.OnExhausted(r.OrderedOnExhausted), Ordering: models.Ordering(r.Ordering), ConsumeFrom: r.ConsumeFrom,
		DeadLetterRetentionHours: r.DeadLetterRetentionHours, MaxThrottles: r.MaxThrottles,
		EndpointHeaders: r.EndpointHeaders, BasicAuth: r.BasicAuth}
	if r.PushAuth != nil {
		s.PushAuth = &models.PushAuth{Audience: r.PushAuth.Audience}
	}
	for _, sub := range r.Subscriptions {
		s.Subscriptions = append(s.Subscriptions, models.Subscription{Topic: sub.Topic, Tags: sub.Tags, Filter: sub.Filter})
	}
	return s
}

func (s *Server) groupCreate(c echo.Context) error {
	var req groupCreateRequest
	if err := bodyOf(c, 256<<10, &req); err != nil {
		return err
	}
	g, err := s.ctl.CreateGroup(c.Request().Context(), actor(c), req.spec())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, groupDTO(g, true))
}

// groupGet shows a group without its signing secret and writes no audit row, so a
// dashboard may poll it. `?include=secret` is the explicit read of the secret:
// operators and admins only (403 for viewers), audited as group.secret.read.
func (s *Server) groupGet(c echo.Context) error {
	switch c.QueryParam("include") {
	case "":
		g, err := s.ctl.GetGroup(c.Request().Context(), c.Param("group"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, groupDTO(g, false))
	case "secret":
		if userFrom(c).Role == models.RoleViewer {
			return problem(ProblemForbidden, "reading the signing secret needs role operator or admin")
		}
		g, err := s.ctl.RevealSecret(c.Request().Context(), actor(c), c.Param("group"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, groupDTO(g, true))
	}
	return &models.ValidationError{Errors: []models.FieldError{{Pointer: "/include", Detail: "must be secret (or absent)"}}}
}

// groupDelete removes the group (`?purge=true`: its dead letters and attempt log at
// once) and answers what went.
func (s *Server) groupDelete(c echo.Context) error {
	purge, err := boolQuery(c, "purge")
	if err != nil {
		return err
	}
	out, err := s.ctl.DeleteGroup(c.Request().Context(), actor(c), c.Param("group"), purge)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) groupList(c echo.Context) error {
	return respondList(c, s.ctl.ListGroups, func(g *models.Group) GroupDTO { return groupDTO(g, false) })
}

// DroppedEndpointAuthHeader names, on a group PATCH that moved the endpoint to
// another host, the stored endpoint auth it dropped: header names and
// control.BasicAuthDropped, comma-separated. Absent when nothing was dropped.
const DroppedEndpointAuthHeader = "Herald-Dropped-Endpoint-Auth"

// groupUpdate applies a JSON merge patch to a group. `?keep_endpoint_auth=true`
// (admin only) keeps stored header values and the basic-auth password when the
// patch moves endpoint_url to another host; otherwise those the patch leaves
// masked are dropped and named in DroppedEndpointAuthHeader.
func (s *Server) groupUpdate(c echo.Context) error {
	keep, err := boolQuery(c, "keep_endpoint_auth")
	if err != nil {
		return err
	}
	body, err := readBody(c, 256<<10)
	if err != nil {
		return err
	}
	// The patch is applied to the group as it is when written, so concurrent patches
	// of different fields both land.
	g, dropped, err := s.ctl.PatchGroupWith(c.Request().Context(), actor(c), c.Param("group"), func(g *models.Group) (control.GroupSpec, error) {
		req, err := applyGroupPatch(g, body)
		spec := req.spec()
		spec.KeepEndpointAuth = keep
		return spec, err
	})
	if err != nil {
		return err
	}
	if len(dropped) > 0 {
		c.Response().Header().Set(DroppedEndpointAuthHeader, strings.Join(dropped, ", "))
	}
	return c.JSON(http.StatusOK, groupDTO(g, false))
}

// GroupStatsDTO is a group's delivery health (counters and breaker): lag in messages and
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
	// BlockedQueues lists, for an ordered group, each queue stopped on a failed head.
	BlockedQueues []BlockedQueueDTO `json:"blocked_queues"`
	// BlockedKeys lists, for a group ordered by key, the first 100 keys (by queue
	// and key) stopped on a failed POST; BlockedKeyCount counts them all.
	BlockedKeys     []BlockedKeyDTO `json:"blocked_keys"`
	BlockedKeyCount int             `json:"blocked_key_count"`
	// UnreachableNodes lists the db nodes holding the group's queues that do not
	// answer: what their queues hold past the committed offsets is missing from the
	// lag. Empty when every node answers.
	UnreachableNodes []NodeHealthDTO `json:"unreachable_nodes"`
}

func fmtTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(control.TimeFormat)
	return &s
}

func (s *Server) groupStats(c echo.Context) error {
	st, err := s.ctl.GroupStats(c.Request().Context(), c.Param("group"))
	if err != nil {
		return err
	}
	g, h := st.Group, st.Health
	return c.JSON(http.StatusOK, GroupStatsDTO{BlockedQueues: blockedQueueDTOs(st.Blocked), BlockedKeys: blockedKeyDTOs(st.BlockedKeys), BlockedKeyCount: st.BlockedKeyCount, Group: g.Name, Status: string(g.Status), PausedReason: g.PausedReason,
		LagMessages: st.LagMessages, LagSeconds: st.LagSeconds, RateLimit: g.RateLimit, EffectiveRate: h.EffectiveRate,
		ConsecutiveFailures: h.ConsecutiveFailures, SuccessesMinute: h.SuccessesMinute, FailuresMinute: h.FailuresMinute,
		LastStatus: h.LastStatus, LastError: h.LastError, LastSuccessAt: fmtTime(h.LastSuccessAt), FailingSince: fmtTime(h.FailingSince),
		ThrottledUntil: fmtTime(h.ThrottledUntil), Breaker: h.BreakerState, BreakerOpenUntil: fmtTime(h.BreakerOpenUntil),
		RetryMessages: st.RetryMessages, DeadLetters: st.DeadLetters, UnreachableNodes: nodeHealthDTOs(st.Unreachable)})
}

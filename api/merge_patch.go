package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// groupSettings is the writable part of a group: the document a PATCH merges into.
type groupSettings struct {
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
}

// readOnlyGroupFields may appear in a PATCH body (a client echoing a GET) only with
// their current value; changing them has its own action (pause, resume, rotate).
var readOnlyGroupFields = []string{"id", "name", "signing_secret", "status", "paused_reason", "previous_secret_expires_at", "config_version", "created_at", "updated_at"}

func settingsOf(g *models.Group) groupSettings {
	d := groupDTO(g)
	return groupSettings{EndpointURL: d.EndpointURL, Subscriptions: d.Subscriptions, BatchSize: d.BatchSize, BatchMaxBytes: d.BatchMaxBytes,
		BatchWindowMS: d.BatchWindowMS, MaxInFlight: d.MaxInFlight, RateLimit: d.RateLimit, TimeoutMS: d.TimeoutMS,
		MaxAttempts: d.MaxAttempts, RetrySchedule: d.RetrySchedule, Ordered: d.Ordered, ConsumeFrom: d.ConsumeFrom}
}

// mergePatch applies an RFC 7386 JSON merge patch to doc: objects merge member by
// member, null removes a member, anything else (arrays included) replaces it.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}

func (s *Server) groupUpdate(c echo.Context) error {
	body, err := readBody(c, 256<<10)
	if err != nil {
		return err
	}
	g, err := s.applyGroupPatch(c, c.Param("group"), body)
	if err != nil {
		return err
	}
	d := groupDTO(g)
	d.SigningSecret = ""
	return c.JSON(http.StatusOK, d)
}

// applyGroupPatch merges patch (a JSON merge patch of the group's settings) into the
// named group, validates the result like a create (fields removed by null take their
// defaults), checks a changed endpoint against the SSRF guard, stores it, tells the
// dispatchers and audits the change. Shared by the API and the console.
func (s *Server) applyGroupPatch(c echo.Context, name string, patch []byte) (*models.Group, error) {
	ctx := c.Request().Context()
	g, err := s.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return nil, problem("malformed-request", "the body must be a JSON object (a merge patch of the group)")
	}
	current := groupDTO(g)
	cur, _ := json.Marshal(current)
	var curFields map[string]json.RawMessage
	_ = json.Unmarshal(cur, &curFields)
	writable, _ := json.Marshal(settingsOf(g))
	var doc map[string]any
	_ = json.Unmarshal(writable, &doc)
	var v models.ValidationError
	for k, raw := range fields {
		if slices.Contains(readOnlyGroupFields, k) {
			if k == "signing_secret" || !jsonEqual(raw, curFields[k]) {
				v.Add("/"+k, k+" cannot be changed by PATCH (use pause, resume or secret/rotate)")
			}
			delete(fields, k)
			continue
		}
		if _, ok := doc[k]; !ok {
			return nil, problem("unknown-field", "unknown field \""+k+"\"")
		}
	}
	if len(v.Errors) > 0 {
		p := problem("read-only-field", v.Error())
		p.Errors = v.Errors
		return nil, p
	}
	var pm map[string]any
	rest, _ := json.Marshal(fields)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.UseNumber()
	if err := dec.Decode(&pm); err != nil {
		return nil, problem("malformed-request", err.Error())
	}
	merged, _ := json.Marshal(mergePatch(doc, pm))
	var req groupCreateRequest
	if err := decodeStrict(merged, &req); err != nil {
		return nil, err
	}
	before := settingsOf(g)
	ng := *g
	ng.EndpointURL = req.EndpointURL
	ng.BatchSize = orDefault(req.BatchSize, models.DefaultBatchSize)
	ng.BatchMaxBytes = orDefault(req.BatchMaxBytes, models.DefaultBatchMaxBytes)
	ng.BatchWindowMS = orDefault(req.BatchWindowMS, 0)
	ng.MaxInFlight = orDefault(req.MaxInFlight, models.DefaultMaxInFlight)
	ng.RateLimit = orDefault(req.RateLimit, 0)
	ng.TimeoutMS = orDefault(req.TimeoutMS, models.DefaultTimeoutMS)
	ng.MaxAttempts = orDefault(req.MaxAttempts, models.DefaultMaxAttempts)
	ng.RetrySchedule = req.RetrySchedule
	if ng.RetrySchedule == nil {
		ng.RetrySchedule = models.DefaultRetrySchedule
	}
	ng.Ordered = req.Ordered
	ng.ConsumeFrom = req.ConsumeFrom
	if ng.ConsumeFrom == "" {
		ng.ConsumeFrom = models.ConsumeLatest
	}
	ng.Subscriptions = nil
	for _, sub := range req.Subscriptions {
		ng.Subscriptions = append(ng.Subscriptions, models.Subscription{Topic: sub.Topic, Tags: sub.Tags})
	}
	if err := ng.Validate(); err != nil {
		return nil, err
	}
	if ng.EndpointURL != g.EndpointURL {
		if err := s.checkEndpoint(c, ng.EndpointURL); err != nil {
			return nil, err
		}
	}
	if err := s.st.GroupUpdate(ctx, &ng); err != nil {
		return nil, err
	}
	_ = s.notifier.Group(ctx, g.ID)
	out, err := s.st.GroupGetByID(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	s.audit(c, "group.update", g.Name, before, settingsOf(out))
	return out, nil
}

// checkEndpoint refuses endpoint URLs the SSRF guard blocks (DESIGN §8).
func (s *Server) checkEndpoint(c echo.Context, raw string) error {
	if err := s.guard.CheckURL(c.Request().Context(), raw); err != nil {
		if errors.Is(err, ssrf.ErrBlocked) {
			p := problem("blocked-endpoint", err.Error())
			p.Errors = []models.FieldError{{Pointer: "/endpoint_url", Detail: "private, loopback, link-local and metadata addresses are refused"}}
			return p
		}
		return &models.ValidationError{Errors: []models.FieldError{{Pointer: "/endpoint_url", Detail: err.Error()}}}
	}
	return nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

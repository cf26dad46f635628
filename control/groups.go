package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/fence"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// GroupSpec is a consumer group's writable settings, as a create or a settings
// change gives them. Nil or empty fields take the defaults of models (batch size 1,
// 1 MiB, window 0 ms, 16 in flight, no rate limit, 15 s timeout, 10 attempts, the
// default retry schedule in seconds, consume_from latest). Name is used by create
// only: a group keeps its name.
type GroupSpec struct {
	Name          string
	EndpointURL   string
	Subscriptions []models.Subscription
	BatchSize     *int
	BatchMaxBytes *int
	BatchWindowMS *int
	MaxInFlight   *int
	RateLimit     *int
	TimeoutMS     *int
	MaxAttempts   *int
	RetrySchedule []int
	Ordered       bool
	// OrderedOnExhausted is dead_letter (default) or pause; see models.OnExhausted.
	OrderedOnExhausted models.OnExhausted
	// Ordering is key (default for an ordered group) or queue; it must be empty
	// unless Ordered (see models.Ordering).
	Ordering    models.Ordering
	ConsumeFrom string
	// DeadLetterRetentionHours is how long dead letters are kept (1 to 8,760; nil: 336).
	DeadLetterRetentionHours *int
	// MaxThrottles is how many throttles in a row make a message's failed attempt
	// (1 to 1,000; nil: 10; models.Group.MaxThrottles).
	MaxThrottles *int
	// PushAuth turns push tokens on (nil: off). EndpointHeaders (names in any case,
	// stored as models.CanonicalHeaderName: lower case) and
	// BasicAuth are added to each POST; a value equal to models.MaskedValue keeps the
	// group's current value, so a client may send back what it read.
	PushAuth        *models.PushAuth
	EndpointHeaders map[string]string
	BasicAuth       *models.BasicAuth
	// KeepEndpointAuth, on a change that moves EndpointURL to another receiver
	// (host, port, or a fall from https to http), keeps the stored values EndpointHeaders and BasicAuth
	// leave masked; without it they are dropped (keptAuth). Admin only; not stored.
	KeepEndpointAuth bool
}

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// apply writes spec's settings into g; a nil or empty field takes the default that
// models.Group.ApplyDefaults gives (the one source of a group's defaults).
func (spec GroupSpec) apply(g *models.Group) {
	var d models.Group
	d.ApplyDefaults()
	g.EndpointURL = spec.EndpointURL
	g.BatchSize = orDefault(spec.BatchSize, d.BatchSize)
	g.BatchMaxBytes = orDefault(spec.BatchMaxBytes, d.BatchMaxBytes)
	g.BatchWindowMS = orDefault(spec.BatchWindowMS, d.BatchWindowMS)
	g.MaxInFlight = orDefault(spec.MaxInFlight, d.MaxInFlight)
	g.RateLimit = orDefault(spec.RateLimit, d.RateLimit)
	g.TimeoutMS = orDefault(spec.TimeoutMS, d.TimeoutMS)
	g.MaxAttempts = orDefault(spec.MaxAttempts, d.MaxAttempts)
	g.RetrySchedule = spec.RetrySchedule
	if len(g.RetrySchedule) == 0 { // null and [] both mean the default schedule
		g.RetrySchedule = d.RetrySchedule
	}
	g.Ordered = spec.Ordered
	g.OrderedOnExhausted = cmp.Or(spec.OrderedOnExhausted, d.OrderedOnExhausted)
	g.Ordering = spec.Ordering
	if g.Ordered && g.Ordering == "" {
		g.Ordering = models.OrderingKey
	}
	g.DeadLetterRetentionHours = orDefault(spec.DeadLetterRetentionHours, d.DeadLetterRetentionHours)
	g.MaxThrottles = orDefault(spec.MaxThrottles, d.MaxThrottles)
	g.ConsumeFrom = cmp.Or(spec.ConsumeFrom, d.ConsumeFrom)
	g.PushAuth = spec.PushAuth
	g.EndpointAuth = spec.endpointAuth(g.EndpointAuth)
	g.Subscriptions = nil
	for _, sub := range spec.Subscriptions {
		g.Subscriptions = append(g.Subscriptions, models.Subscription{Topic: sub.Topic, Tags: sub.Tags, Filter: strings.TrimSpace(sub.Filter)})
	}
}

// specOf is g's settings as a spec that apply turns back into the same group (every
// field set, the endpoint auth masked: apply keeps the stored values).
func specOf(g *models.Group) GroupSpec {
	masked := g.EndpointAuth.Masked()
	spec := GroupSpec{Name: g.Name, EndpointURL: g.EndpointURL, BatchSize: &g.BatchSize, BatchMaxBytes: &g.BatchMaxBytes,
		BatchWindowMS: &g.BatchWindowMS, MaxInFlight: &g.MaxInFlight, RateLimit: &g.RateLimit, TimeoutMS: &g.TimeoutMS,
		MaxAttempts: &g.MaxAttempts, RetrySchedule: slices.Clone(g.RetrySchedule), Ordered: g.Ordered,
		OrderedOnExhausted: g.OrderedOnExhausted, Ordering: g.Ordering, ConsumeFrom: g.ConsumeFrom, DeadLetterRetentionHours: &g.DeadLetterRetentionHours,
		MaxThrottles: &g.MaxThrottles, Subscriptions: slices.Clone(g.Subscriptions), EndpointHeaders: masked.Headers, BasicAuth: masked.Basic}
	if g.PushAuth != nil {
		pa := *g.PushAuth
		spec.PushAuth = &pa
	}
	return spec
}

// GroupPatch changes some of a group's settings: a nil field keeps the group's
// value as it is when the change is written, so a patch of one field never undoes
// another change made meanwhile, nor resets a setting its sender did not show.
// Values and units are those of GroupSpec. PushAuth, EndpointHeaders and BasicAuth
// change only with their Set flag: PushAuth nil then turns push tokens off,
// BasicAuth nil removes basic auth; masked values (models.MaskedValue) keep the
// stored ones.
type GroupPatch struct {
	EndpointURL        *string
	Subscriptions      *[]models.Subscription
	BatchSize          *int
	BatchMaxBytes      *int
	BatchWindowMS      *int
	MaxInFlight        *int
	RateLimit          *int
	TimeoutMS          *int
	MaxAttempts        *int
	RetrySchedule      *[]int
	Ordered            *bool
	OrderedOnExhausted *models.OnExhausted
	// Ordering nil keeps the group's; a patch turning Ordered off without naming
	// Ordering clears it.
	Ordering                 *models.Ordering
	ConsumeFrom              *string
	DeadLetterRetentionHours *int
	MaxThrottles             *int

	SetPushAuth        bool
	PushAuth           *models.PushAuth
	SetEndpointHeaders bool
	EndpointHeaders    map[string]string
	SetBasicAuth       bool
	BasicAuth          *models.BasicAuth
	// KeepEndpointAuth is GroupSpec.KeepEndpointAuth.
	KeepEndpointAuth bool
}

// over returns spec with the fields p sets replaced.
func (p GroupPatch) over(spec GroupSpec) GroupSpec {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	setInt := func(dst **int, v *int) {
		if v != nil {
			n := *v
			*dst = &n
		}
	}
	set(&spec.EndpointURL, p.EndpointURL)
	set(&spec.ConsumeFrom, p.ConsumeFrom)
	if p.Subscriptions != nil {
		spec.Subscriptions = *p.Subscriptions
	}
	setInt(&spec.BatchSize, p.BatchSize)
	setInt(&spec.BatchMaxBytes, p.BatchMaxBytes)
	setInt(&spec.BatchWindowMS, p.BatchWindowMS)
	setInt(&spec.MaxInFlight, p.MaxInFlight)
	setInt(&spec.RateLimit, p.RateLimit)
	setInt(&spec.TimeoutMS, p.TimeoutMS)
	setInt(&spec.MaxAttempts, p.MaxAttempts)
	setInt(&spec.DeadLetterRetentionHours, p.DeadLetterRetentionHours)
	setInt(&spec.MaxThrottles, p.MaxThrottles)
	if p.RetrySchedule != nil {
		spec.RetrySchedule = *p.RetrySchedule
	}
	if p.Ordered != nil {
		spec.Ordered = *p.Ordered
	}
	if p.OrderedOnExhausted != nil {
		spec.OrderedOnExhausted = *p.OrderedOnExhausted
	}
	if p.Ordering != nil {
		spec.Ordering = *p.Ordering
	} else if p.Ordered != nil && !*p.Ordered {
		spec.Ordering = ""
	}
	if p.SetPushAuth {
		spec.PushAuth = p.PushAuth
	}
	if p.SetEndpointHeaders {
		spec.EndpointHeaders = p.EndpointHeaders
	}
	if p.SetBasicAuth {
		spec.BasicAuth = p.BasicAuth
	}
	spec.KeepEndpointAuth = p.KeepEndpointAuth
	return spec
}

// endpointAuth resolves spec's headers and basic auth against cur, the group's
// current ones: masked values keep what cur holds.
func (spec GroupSpec) endpointAuth(cur models.EndpointAuth) models.EndpointAuth {
	var out models.EndpointAuth
	if len(spec.EndpointHeaders) > 0 {
		out.Headers = make(map[string]string, len(spec.EndpointHeaders))
		for k, v := range models.CanonicalHeaders(spec.EndpointHeaders) {
			if old, ok := cur.Headers[k]; ok && v == models.MaskedValue {
				v = old
			}
			out.Headers[k] = v
		}
	}
	if b := spec.BasicAuth; b != nil {
		nb := *b
		if cur.Basic != nil && nb.Password == models.MaskedValue {
			nb.Password = cur.Basic.Password
		}
		out.Basic = &nb
	}
	return out
}

// PushAuthSetting is a group's push-auth setting in JSON: Audience is the `aud`
// claim, empty for the endpoint URL.
type PushAuthSetting struct {
	Audience string `json:"audience"`
}

// GroupSettings is the writable part of a group in its JSON shape (the document a
// REST merge patch applies to, and what the audit log records). Units: *_ms in
// milliseconds, rate_limit in messages/s (0 = unlimited), retry_schedule in seconds.
type GroupSettings struct {
	EndpointURL   string                `json:"endpoint_url"`
	Subscriptions []SubscriptionSetting `json:"subscriptions"`
	BatchSize     int                   `json:"batch_size"`
	BatchMaxBytes int                   `json:"batch_max_bytes"`
	BatchWindowMS int                   `json:"batch_window_ms"`
	MaxInFlight   int                   `json:"max_in_flight"`
	RateLimit     int                   `json:"rate_limit"`
	TimeoutMS     int                   `json:"timeout_ms"`
	MaxAttempts   int                   `json:"max_attempts"`
	RetrySchedule []int                 `json:"retry_schedule"`
	Ordered       bool                  `json:"ordered"`
	// OrderedOnExhausted is dead_letter or pause (models.OnExhausted).
	OrderedOnExhausted models.OnExhausted `json:"ordered_on_exhausted"`
	// Ordering is key or queue for an ordered group, empty otherwise.
	Ordering    models.Ordering `json:"ordering"`
	ConsumeFrom string          `json:"consume_from"`
	// DeadLetterRetentionHours is how long dead letters are kept, in hours (default 336).
	DeadLetterRetentionHours int `json:"dead_letter_retention_hours"`
	// MaxThrottles is how many throttles in a row make a message's failed attempt.
	MaxThrottles int `json:"max_throttles"`
	// PushAuth is null when push tokens are off.
	PushAuth *PushAuthSetting `json:"push_auth"`
	// EndpointHeaders are the static headers, values masked (models.MaskedValue).
	EndpointHeaders map[string]string `json:"endpoint_headers"`
	// BasicAuth is null when none is set; its password is masked.
	BasicAuth *models.BasicAuth `json:"basic_auth"`
}

// SubscriptionSetting is a subscription in JSON; empty Tags means every tag, and an
// empty Filter (an attribute filter on publisher headers, models.Filter) every message.
type SubscriptionSetting struct {
	Topic  string   `json:"topic"`
	Tags   []string `json:"tags"`
	Filter string   `json:"filter"`
}

// SettingsOf returns g's writable settings (nil tags as an empty list).
func SettingsOf(g *models.Group) GroupSettings {
	s := GroupSettings{EndpointURL: g.EndpointURL, BatchSize: g.BatchSize, BatchMaxBytes: g.BatchMaxBytes,
		BatchWindowMS: g.BatchWindowMS, MaxInFlight: g.MaxInFlight, RateLimit: g.RateLimit, TimeoutMS: g.TimeoutMS,
		MaxAttempts: g.MaxAttempts, RetrySchedule: g.RetrySchedule, Ordered: g.Ordered, OrderedOnExhausted: g.OrderedOnExhausted,
		Ordering: g.Ordering, ConsumeFrom: g.ConsumeFrom, DeadLetterRetentionHours: g.DeadLetterRetentionHours,
		MaxThrottles: g.MaxThrottles, Subscriptions: []SubscriptionSetting{}}
	if g.PushAuth != nil {
		s.PushAuth = &PushAuthSetting{Audience: g.PushAuth.Audience}
	}
	masked := g.EndpointAuth.Masked()
	s.EndpointHeaders, s.BasicAuth = masked.Headers, masked.Basic
	if s.EndpointHeaders == nil {
		s.EndpointHeaders = map[string]string{}
	}
	for _, sub := range g.Subscriptions {
		tags := sub.Tags
		if tags == nil {
			tags = []string{}
		}
		s.Subscriptions = append(s.Subscriptions, SubscriptionSetting{Topic: sub.Topic, Tags: tags, Filter: sub.Filter})
	}
	return s
}

// groupRecord is a new group as the audit log records it (never its secret).
type groupRecord struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	GroupSettings
}

// CreateGroup validates spec (models.Group.Validate, then the endpoint address
// against the SSRF guard), stores the group running with a fresh signing secret,
// tells the dispatchers and audits it (group.create). Errors: a
// *models.ValidationError, one also matching ssrf.ErrBlocked for a refused address,
// models.ErrConflict for a taken name, or a ValidationError naming an unknown topic.
// Subscribing to another group's `<group>.dlq` creates that dead-letter topic when
// it does not exist yet (ensureDeadLetterTopics).
func (c *Control) CreateGroup(ctx context.Context, a Actor, spec GroupSpec) (*models.Group, error) {
	g := &models.Group{Name: spec.Name, SigningSecret: signing.NewSecret(), Status: models.GroupRunning}
	spec.apply(g)
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if err := c.checkEndpoint(ctx, g.EndpointURL); err != nil {
		return nil, err
	}
	if err := c.ensureEventsTopic(ctx, g); err != nil {
		return nil, err
	}
	if err := c.ensureDeadLetterTopics(ctx, g); err != nil {
		return nil, err
	}
	if err := c.st.GroupCreate(ctx, g); err != nil {
		return nil, err
	}
	c.notifyGroup(ctx, g.ID)
	c.Record(ctx, a, "group.create", g.Name, nil, groupRecord{ID: g.ID, Name: g.Name, Status: string(g.Status), GroupSettings: SettingsOf(g)})
	return g, nil
}

// PatchGroup changes the settings of group name that p sets, on the group as it is
// when the change is written (a concurrent change of another field stays), validates
// the result like a create, checks a changed endpoint against the SSRF guard, stores
// it (config_version + 1), tells the dispatchers and audits before and after
// (group.update). A change that moves the endpoint to another receiver (sameReceiver) drops the
// stored header values and basic-auth password it does not give again, unless an
// admin asks to keep them (GroupSpec.KeepEndpointAuth); dropped names them (header
// names, BasicAuthDropped). Errors as CreateGroup, models.ErrNotFound, and
// models.ErrForbidden for KeepEndpointAuth without role admin.
func (c *Control) PatchGroup(ctx context.Context, a Actor, name string, p GroupPatch) (g *models.Group, dropped []string, err error) {
	return c.PatchGroupWith(ctx, a, name, func(g *models.Group) (GroupSpec, error) { return p.over(specOf(g)), nil })
}

// PatchGroupWith is PatchGroup for a change computed from the group as it is: build
// turns the current group into its new full spec (nil fields: defaults, as at create;
// e.g. a JSON merge patch, where null resets a member) and
// runs again on the newer group when another change landed in between, so two
// changes of different fields never overwrite each other. build's error is returned
// as is. dropped is as PatchGroup's.
func (c *Control) PatchGroupWith(ctx context.Context, a Actor, name string, build func(*models.Group) (GroupSpec, error)) (_ *models.Group, dropped []string, _ error) {
	var g *models.Group
	for attempt := 0; ; attempt++ {
		var err error
		if g, err = c.st.GroupGetByName(ctx, name); err != nil {
			return nil, nil, err
		}
		spec, err := build(g)
		if err != nil {
			return nil, nil, err
		}
		if spec, dropped, err = keptAuth(a, g.EndpointURL, spec); err != nil {
			return nil, nil, err
		}
		ng := *g
		spec.apply(&ng)
		validate := ng.Validate
		if len(g.Subscriptions) == 0 && len(ng.Subscriptions) == 0 {
			// A group whose last topic was force-deleted stays editable (it is paused,
			// and ResumeGroup wants a subscription first).
			validate = ng.ValidateUnsubscribed
		}
		if err := validate(); err != nil {
			return nil, nil, err
		}
		if ng.EndpointURL != g.EndpointURL {
			if err := c.checkEndpoint(ctx, ng.EndpointURL); err != nil {
				return nil, nil, err
			}
		}
		if err := c.ensureEventsTopic(ctx, &ng); err != nil {
			return nil, nil, err
		}
		if err := c.ensureDeadLetterTopics(ctx, &ng); err != nil {
			return nil, nil, err
		}
		// Concurrent patches of other fields are reapplied on the newer group, never lost.
		err = c.st.GroupUpdate(ctx, &ng)
		if errors.Is(err, store.ErrGroupChanged) && attempt < 9 {
			continue
		}
		if errors.Is(err, store.ErrGroupChanged) {
			return nil, nil, fmt.Errorf("%w: group %s kept changing; retry", models.ErrConflict, name)
		}
		if err != nil {
			return nil, nil, err
		}
		break
	}
	c.notifyGroup(ctx, g.ID)
	out, err := c.st.GroupGetByID(ctx, g.ID)
	if err != nil {
		return nil, nil, err
	}
	c.Record(ctx, a, "group.update", g.Name, SettingsOf(g), SettingsOf(out))
	if len(dropped) > 0 {
		c.Record(ctx, a, "group.endpoint_auth.drop", g.Name, nil, map[string]any{"dropped": dropped, "endpoint_url": out.EndpointURL})
	}
	return out, dropped, nil
}

// blockedEndpoint is a refused endpoint address: it matches ssrf.ErrBlocked and a
// *models.ValidationError on /endpoint_url.
type blockedEndpoint struct {
	cause error
	field *models.ValidationError
}

// Error is the guard's reason, e.g. "127.0.0.1: address blocked".
func (e *blockedEndpoint) Error() string { return e.cause.Error() }

// Unwrap returns the guard's error (ssrf.ErrBlocked) and the field error.
func (e *blockedEndpoint) Unwrap() []error { return []error{e.cause, e.field} }

// checkEndpoint refuses endpoint URLs the SSRF guard blocks (private, loopback, metadata).
func (c *Control) checkEndpoint(ctx context.Context, raw string) error {
	err := c.guard.CheckURL(ctx, raw)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ssrf.ErrBlocked):
		return &blockedEndpoint{cause: err, field: &models.ValidationError{Errors: []models.FieldError{
			{Pointer: "/endpoint_url", Detail: "private, loopback, link-local and metadata addresses are refused"}}}}
	}
	return &models.ValidationError{Errors: []models.FieldError{{Pointer: "/endpoint_url", Detail: err.Error()}}}
}

// PauseGroup stops deliveries to group name (reason "paused by <actor>"), tells the
// dispatchers and audits it (group.paused). Before it answers, every worker is
// fenced off the group (fence.RaiseStatus): no POST starts after the answer, of a
// job running, queued or cut before the dispatcher heard of the pause; POSTs
// already on the wire complete. Without Redis (the CLI) workers stop within their
// 1 s group cache. Errors: models.ErrNotFound; an error naming the fence when the
// group is paused but workers could not be told.
func (c *Control) PauseGroup(ctx context.Context, a Actor, name string) (*models.Group, error) {
	return c.setStatus(ctx, a, name, models.GroupPaused, "paused by "+a.Username)
}

// ResumeGroup restarts deliveries to group name and audits it (group.running).
// Errors: models.ErrNotFound; a *models.ValidationError on /subscriptions for a
// group without any (a force-deleted topic took its last one): subscribe it first.
func (c *Control) ResumeGroup(ctx context.Context, a Actor, name string) (*models.Group, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(g.Subscriptions) == 0 {
		return nil, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/subscriptions",
			Detail: "the group has no subscription; give it one (PATCH) before resuming"}}}
	}
	return c.setStatus(ctx, a, name, models.GroupRunning, "")
}

func (c *Control) setStatus(ctx context.Context, a Actor, name string, st models.GroupStatus, reason string) (*models.Group, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	cv, err := c.st.GroupSetStatus(ctx, g.ID, st, reason)
	if err != nil {
		return nil, err
	}
	// The status fence is raised before the answer (as a reset's): from then on no
	// worker starts a POST of a paused group.
	var ferr error
	if c.rdb != nil {
		ferr = fence.RaiseStatus(ctx, c.rdb, c.keys, g.ID, cv, st != models.GroupRunning)
	}
	c.notifyGroup(ctx, g.ID)
	c.Record(ctx, a, "group."+string(st), g.Name, map[string]string{"status": string(g.Status)}, map[string]string{"status": string(st)})
	ev := models.Event{Type: models.EventGroupPaused, Group: g.Name, Data: map[string]any{"reason": reason, "by": a.Username, "previous_status": string(g.Status)}}
	if st == models.GroupRunning {
		ev.Type = models.EventGroupResumed
	}
	if g.Status != st {
		c.publishEvent(ctx, ev)
	}
	if ferr != nil && st != models.GroupRunning {
		c.log.Error("group paused but workers not fenced: jobs already cut may still be sent for about a second", "group", g.Name, "err", ferr)
		return nil, fmt.Errorf("group %s paused, workers not fenced: %w", g.Name, ferr)
	}
	if ferr != nil {
		c.log.Warn("group resumed; workers learn it from their group cache", "group", g.Name, "err", ferr)
	}
	return c.st.GroupGetByID(ctx, g.ID)
}

// RevealSecret returns group name with its signing secret and audits the read
// (group.secret.read, noting the actor's transport when it has one).
func (c *Control) RevealSecret(ctx context.Context, a Actor, name string) (*models.Group, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	var after any
	if a.Via != "" {
		after = map[string]string{"via": a.Via}
	}
	c.Record(ctx, a, "group.secret.read", g.Name, nil, after)
	return g, nil
}

// ListGroups returns one page of groups in id order, secrets included: transports
// blank them for lists.
func (c *Control) ListGroups(ctx context.Context, p PageRequest) (Page[*models.Group], error) {
	gs, err := c.st.GroupList(ctx, p.After, p.Limit)
	if err != nil {
		return Page[*models.Group]{}, err
	}
	return pageOf(gs, p.Limit, func(g *models.Group) int64 { return g.ID }), nil
}

// Secret rotation overlap bounds, in seconds: by default the previous secret keeps
// signing for 24 h (as Svix), at most 7 days; 0 retires it at once.
const (
	DefaultSecretOverlapSeconds = 86400
	MaxSecretOverlapSeconds     = 7 * 86400
)

// RotateSecret gives group name a new signing secret; the old one keeps signing for
// overlap seconds (0 to MaxSecretOverlapSeconds). Workers pick it up within a second
// (config_version bump). Audited as group.secret.rotate. Errors: a
// *models.ValidationError on /overlap_seconds, models.ErrNotFound.
func (c *Control) RotateSecret(ctx context.Context, a Actor, name string, overlap int) (*models.Group, error) {
	if overlap < 0 || overlap > MaxSecretOverlapSeconds {
		return nil, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/overlap_seconds", Detail: "must be between 0 and 604800 seconds"}}}
	}
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	expires := time.Now().Add(time.Duration(overlap) * time.Second)
	if err := c.st.GroupRotateSecret(ctx, g.ID, signing.NewSecret(), expires); err != nil {
		return nil, err
	}
	c.notifyGroup(ctx, g.ID)
	c.Record(ctx, a, "group.secret.rotate", g.Name, nil, map[string]any{"overlap_seconds": overlap, "previous_secret_expires_at": expires.UTC()})
	return c.st.GroupGetByID(ctx, g.ID)
}

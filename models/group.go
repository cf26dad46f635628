package models

import (
	"net/url"
	"slices"
	"strings"
	"time"
)

// GroupStatus is a consumer group's delivery state.
type GroupStatus string

const (
	// GroupRunning delivers normally.
	GroupRunning GroupStatus = "running"
	// GroupPaused delivers nothing; its backlog and cursors are kept. PausedReason says why.
	GroupPaused GroupStatus = "paused"
	// GroupDisabled was auto-paused after failing for DisableAfter; resume restarts it.
	GroupDisabled GroupStatus = "disabled"
)

// GroupStatuses lists every GroupStatus.
func GroupStatuses() []GroupStatus { return []GroupStatus{GroupRunning, GroupPaused, GroupDisabled} }

// ConsumeFrom values for a new group or subscription. A timestamp (RFC 3339) is also accepted.
const (
	// ConsumeEarliest starts cursors at offset 0: the whole retained backlog is delivered.
	ConsumeEarliest = "earliest"
	// ConsumeLatest starts cursors at the queue's max offset when the group is created (default).
	ConsumeLatest = "latest"
)

// Group limits and defaults, enforced by the owning dispatcher. Units are in the names.
const (
	DefaultBatchSize     = 1
	MaxBatchSize         = 1000
	DefaultBatchMaxBytes = 1 << 20
	DefaultMaxInFlight   = 16
	MaxMaxInFlight       = 1024
	DefaultTimeoutMS     = 15000
	MaxTimeoutMS         = 30000
	DefaultMaxAttempts   = 10
	MaxBatchWindowMS     = 60000
	// DefaultMaxThrottles and MaxMaxThrottles bound Group.MaxThrottles.
	DefaultMaxThrottles = 10
	MaxMaxThrottles     = 1000
)

// DefaultRetrySchedule is the delay in seconds before attempts 2, 3, …: 5 s, 5 min,
// 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, as Standard Webhooks recommends.
var DefaultRetrySchedule = []int{5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400}

// Subscription binds a group to a topic. Tags filters by message tag; empty means every tag
// (RocketMQ's subscribe(topic, tags)). Filter, when not empty, is an attribute
// filter on the message's publisher headers (see Filter for its grammar; Pub/Sub's
// subscription filters): a message must pass both. Compiled is Filter parsed, set
// by whoever builds a subscription that will be evaluated often (the store);
// MatchesAttributes parses Filter itself when it is nil.
type Subscription struct {
	TopicID  int64
	Topic    string
	Tags     []string
	Filter   string
	Compiled *Filter
}

// Matches reports whether a message with tag passes the subscription's tag filter.
func (s Subscription) Matches(tag string) bool {
	return len(s.Tags) == 0 || slices.Contains(s.Tags, tag)
}

// HasFilter reports whether the subscription has an attribute filter, so its
// messages' headers must be read to decide (the dispatcher reads the headers column
// only then).
func (s Subscription) HasFilter() bool { return s.Filter != "" }

// MatchesAttributes reports whether a message with headers (lower-case names, as
// stored) passes the attribute filter; true without one. A filter that does not
// parse (never stored: validated on write) matches nothing.
func (s Subscription) MatchesAttributes(headers map[string]string) bool {
	if s.Filter == "" {
		return true
	}
	f := s.Compiled
	if f == nil {
		var err error
		if f, err = ParseFilter(s.Filter); err != nil || f == nil {
			return err == nil
		}
	}
	return f.Match(headers)
}

// Group is a consumer group: one subscriber endpoint with its delivery settings.
// BatchSize is messages per POST; BatchMaxBytes caps one POST's body bytes;
// BatchWindowMS is how long a partial batch may wait (AWS Lambda's batching window);
// MaxInFlight is parallel POSTs for the whole group; RateLimit is messages/s (0 =
// unlimited); TimeoutMS bounds one POST; MaxAttempts and RetrySchedule (seconds)
// drive retries. Ordered groups retry a failed head in place; Ordering (key, the
// default for ordered groups, or queue; empty when not ordered) says whether one
// POST at a time goes per key or per queue; OrderedOnExhausted (default
// dead_letter) says what happens when a head exhausts MaxAttempts. ConfigVersion grows on every change so caches can tell stale copies.
// SigningSecret is the current `whsec_` secret; after a rotation PreviousSigningSecret
// keeps signing too until PreviousSecretExpiresAt (see SigningSecrets).
type Group struct {
	ID                      int64
	Name                    string
	EndpointURL             string
	SigningSecret           string
	PreviousSigningSecret   string
	PreviousSecretExpiresAt *time.Time
	Subscriptions           []Subscription
	BatchSize               int
	BatchMaxBytes           int
	BatchWindowMS           int
	MaxInFlight             int
	RateLimit               int
	TimeoutMS               int
	MaxAttempts             int
	RetrySchedule           []int
	Ordered                 bool
	OrderedOnExhausted      OnExhausted
	Ordering                Ordering
	ConsumeFrom             string
	// DeadLetterRetentionHours is how long dead letters are kept before maintenance
	// deletes them (default DefaultDeadLetterRetentionHours, 336 h).
	DeadLetterRetentionHours int
	// MaxThrottles is how many times in a row a message may be throttled (429, or
	// 503 with Retry-After) before that throttle counts as its failed attempt (1 to
	// MaxMaxThrottles, default DefaultMaxThrottles): an endpoint that always refuses
	// one message sends it down the retry schedule to a dead letter instead of
	// pausing the group forever. A group that bisects throttled batches adds one per
	// halving (see delivery.ThrottleLimit).
	MaxThrottles int
	Status       GroupStatus
	PausedReason string
	// PushAuth, when set, adds a Herald-signed JWT to each POST (see PushAuth).
	PushAuth *PushAuth
	// EndpointAuth holds static headers and basic credentials added to each POST.
	EndpointAuth EndpointAuth
	// Unreadable, when not empty, says why the group's stored secrets or endpoint
	// auth cannot be read back (a truncated column, a key missing from the keyring).
	// Such a group is still listed, shown as unreadable and deletable, but nothing is
	// delivered for it (dispatchers skip it, workers refuse its jobs) until the
	// column is written again (a new endpoint auth, a secret rotation); other
	// groups are not affected.
	Unreadable    string
	ConfigVersion int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// SigningSecrets returns the secrets that sign a POST made at now: the current one,
// then the previous one while its overlap window (PreviousSecretExpiresAt) is open.
// The worker sends one `v1,` signature per secret, space-separated, in
// `webhook-signature` (Standard Webhooks), so receivers holding either secret verify.
func (g *Group) SigningSecrets(now time.Time) []string {
	out := []string{g.SigningSecret}
	if g.PreviousSigningSecret != "" && g.PreviousSecretExpiresAt != nil && now.Before(*g.PreviousSecretExpiresAt) {
		out = append(out, g.PreviousSigningSecret)
	}
	return out
}

// ApplyDefaults fills zero settings with the package defaults.
func (g *Group) ApplyDefaults() {
	if g.BatchSize == 0 {
		g.BatchSize = DefaultBatchSize
	}
	if g.BatchMaxBytes == 0 {
		g.BatchMaxBytes = DefaultBatchMaxBytes
	}
	if g.MaxInFlight == 0 {
		g.MaxInFlight = DefaultMaxInFlight
	}
	if g.TimeoutMS == 0 {
		g.TimeoutMS = DefaultTimeoutMS
	}
	if g.MaxAttempts == 0 {
		g.MaxAttempts = DefaultMaxAttempts
	}
	if len(g.RetrySchedule) == 0 {
		g.RetrySchedule = slices.Clone(DefaultRetrySchedule)
	}
	if g.OrderedOnExhausted == "" {
		g.OrderedOnExhausted = OnExhaustedDeadLetter
	}
	if g.Ordered && g.Ordering == "" {
		g.Ordering = OrderingKey
	}
	if g.ConsumeFrom == "" {
		g.ConsumeFrom = ConsumeLatest
	}
	if g.DeadLetterRetentionHours == 0 {
		g.DeadLetterRetentionHours = DefaultDeadLetterRetentionHours
	}
	if g.MaxThrottles == 0 {
		g.MaxThrottles = DefaultMaxThrottles
	}
	if g.Status == "" {
		g.Status = GroupRunning
	}
}

// Validate checks names, ranges and the endpoint URL's shape (at most 2,048 bytes of
// printable ASCII without spaces, http or https, a host, no userinfo), and requires
// at least one subscription. It returns a *ValidationError (unwrapping to ErrInvalid) naming each
// bad field by JSON pointer. Address checks (SSRF) are the caller's.
func (g *Group) Validate() error { return g.validate(true) }

// ValidateUnsubscribed is Validate for a change that leaves a group's subscriptions
// as they are when it has none left (a force-deleted topic took its last one, and
// the group was paused, NoSubscriptionsReason): every other rule still applies.
func (g *Group) ValidateUnsubscribed() error { return g.validate(false) }

// NoSubscriptionsReason is the paused_reason of a group paused because a
// force-deleted topic took its last subscription.
func NoSubscriptionsReason(topic string) string {
	return "no subscription left: topic " + topic + " was deleted"
}

func (g *Group) validate(requireSubscription bool) error {
	var v ValidationError
	if !ValidName(g.Name) {
		v.Add("/name", "must match ^[a-z0-9][a-z0-9._-]{0,119}$")
	} else if ReservedName(g.Name) {
		v.Add("/name", "the .dlq suffix is reserved")
	}
	if len(g.EndpointURL) > MaxEndpointURLBytes {
		v.Add("/endpoint_url", "must be at most "+itoa(MaxEndpointURLBytes)+" bytes")
	} else if !urlChars(g.EndpointURL) {
		v.Add("/endpoint_url", "must be printable ASCII without spaces; percent-encode anything else")
	} else if u, err := url.Parse(g.EndpointURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.Add("/endpoint_url", "must be an absolute http or https URL")
	} else if u.User != nil {
		v.Add("/endpoint_url", "must not contain userinfo")
	}
	if len(g.Subscriptions) == 0 && requireSubscription {
		v.Add("/subscriptions", "at least one subscription is required")
	}
	for i, s := range g.Subscriptions {
		p := "/subscriptions/" + itoa(i)
		if !ValidName(s.Topic) {
			v.Add(p+"/topic", "must name a topic")
		}
		for j, t := range s.Tags {
			if !ValidLabel(t) || t == "" {
				v.Add(p+"/tags/"+itoa(j), "tags are 1 to 255 bytes of UTF-8 without control characters")
			}
		}
		if s.Filter != "" {
			if _, err := ParseFilter(s.Filter); err != nil {
				v.Add(p+"/filter", strings.TrimPrefix(err.Error(), ErrInvalidFilter.Error()+": "))
			}
		}
	}
	rangeCheck(&v, "/batch_size", g.BatchSize, 1, MaxBatchSize)
	rangeCheck(&v, "/batch_max_bytes", g.BatchMaxBytes, 1024, 16<<20)
	rangeCheck(&v, "/batch_window_ms", g.BatchWindowMS, 0, MaxBatchWindowMS)
	rangeCheck(&v, "/max_in_flight", g.MaxInFlight, 1, MaxMaxInFlight)
	rangeCheck(&v, "/rate_limit", g.RateLimit, 0, 1_000_000)
	rangeCheck(&v, "/timeout_ms", g.TimeoutMS, 100, MaxTimeoutMS)
	rangeCheck(&v, "/max_attempts", g.MaxAttempts, 1, 100)
	rangeCheck(&v, "/max_throttles", g.MaxThrottles, 1, MaxMaxThrottles)
	if g.DeadLetterRetentionHours != 0 { // 0 takes the default
		rangeCheck(&v, "/dead_letter_retention_hours", g.DeadLetterRetentionHours, 1, MaxRetentionHours)
	}
	for i, s := range g.RetrySchedule {
		if s < 1 || s > 7*86400 {
			v.Add("/retry_schedule/"+itoa(i), "delays are 1 to 604800 seconds")
		}
	}
	if !slices.Contains(OnExhaustedValues(), g.OrderedOnExhausted) {
		v.Add("/ordered_on_exhausted", "must be dead_letter or pause")
	}
	switch {
	case g.Ordering != "" && !slices.Contains(OrderingValues(), g.Ordering):
		v.Add("/ordering", "must be key or queue")
	case g.Ordering != "" && !g.Ordered:
		v.Add("/ordering", "applies to ordered groups only: set ordered to true, or leave ordering out")
	}
	switch g.ConsumeFrom {
	case ConsumeEarliest, ConsumeLatest:
	default:
		if _, err := time.Parse(time.RFC3339Nano, g.ConsumeFrom); err != nil {
			v.Add("/consume_from", "must be earliest, latest or an RFC 3339 timestamp")
		}
	}
	g.validateEndpointAuth(&v)
	if !slices.Contains(GroupStatuses(), g.Status) {
		v.Add("/status", "must be running, paused or disabled")
	}
	return v.Err()
}

// MaxEndpointURLBytes caps an endpoint URL (the endpoint_url column holds 2,048).
const MaxEndpointURLBytes = 2048

// urlChars reports whether s holds only the characters a URL may carry unescaped
// (printable ASCII, no space): a raw space or non-ASCII byte in a query would make
// every delivery's request line malformed.
func urlChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func rangeCheck(v *ValidationError, pointer string, n, lo, hi int) {
	if n < lo || n > hi {
		v.Add(pointer, "must be between "+itoa(lo)+" and "+itoa(hi))
	}
}

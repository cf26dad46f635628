package web

import (
	"time"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// The console's views: what its templates show of each record, with times already
// formatted (milliseconds, UTC).

func fmtTime(t time.Time) string { return t.UTC().Format(control.TimeFormat) }

func fmtTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := fmtTime(*t)
	return &s
}

func msTime(ms int64) string { return fmtTime(time.UnixMilli(ms)) }

type attemptView struct {
	Group           string
	MessageID       string
	WebhookID       string
	Attempt         int
	Status          int
	ErrorClass      string
	LatencyMS       int
	ResponseExcerpt string
	At              string
}

func attemptViews(as []models.DeliveryAttempt, groups map[int64]string) []attemptView {
	out := make([]attemptView, 0, len(as))
	for _, a := range as {
		out = append(out, attemptView{Group: groups[a.GroupID], MessageID: models.MessageID(a.QueueID, a.Offset), WebhookID: a.WebhookID, Attempt: a.Attempt, Status: a.Status,
			ErrorClass: a.ErrorClass, LatencyMS: a.LatencyMS, ResponseExcerpt: string(a.Excerpt), At: fmtTime(a.CreatedAt)})
	}
	return out
}

type deadLetterView struct {
	ID         int64
	MessageID  string
	Attempts   int
	LastStatus int
	LastError  string
	State      string
	CreatedAt  string
	Delivery   []attemptView
}

func deadLetterViewOf(d models.DeadLetter) deadLetterView {
	return deadLetterView{ID: d.ID, MessageID: models.MessageID(d.QueueID, d.Offset), Attempts: d.Attempts, LastStatus: d.LastStatus,
		LastError: d.LastError, State: string(d.State), CreatedAt: fmtTime(d.CreatedAt)}
}

type apiKeyView struct {
	ID         int64
	Name       string
	Prefix     string
	Topics     []string
	CreatedAt  string
	LastUsedAt *string
	RevokedAt  *string
}

func apiKeyViewOf(k *models.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Topics: k.Topics, CreatedAt: fmtTime(k.CreatedAt),
		LastUsedAt: fmtTimePtr(k.LastUsedAt), RevokedAt: fmtTimePtr(k.RevokedAt)}
}

type userView struct {
	ID        int64
	Username  string
	Role      string
	CreatedAt string
}

func userViewOf(u *models.User) userView {
	return userView{ID: u.ID, Username: u.Username, Role: string(u.Role), CreatedAt: fmtTime(u.CreatedAt)}
}

type queueView struct {
	ID                   int64
	Position             int
	State                string
	Node                 int64
	MinOffset, MaxOffset int64
}

type topicView struct {
	ID                int64
	Name              string
	Queues            []queueView
	PublishedLastHour int64
	CreatedAt         string
}

type messageSummaryView struct {
	ID          string
	Queue       int64
	Offset      int64
	Tag         string
	Key         string
	ContentType string
	BodyBytes   int64
	PublishedAt string
}

func messageSummaryViewOf(m control.MessageSummary) messageSummaryView {
	return messageSummaryView{ID: models.MessageID(m.QueueID, m.Offset), Queue: m.QueueID, Offset: m.Offset, Tag: m.Tag, Key: m.Key,
		ContentType: m.ContentType, BodyBytes: m.BodyBytes, PublishedAt: msTime(m.CreatedAt)}
}

type messageView struct {
	messageSummaryView
	Topic            string
	Headers          map[string]string
	TraceID          string
	DeliveryAttempts []attemptView
}

// groupView is a group without its secret, the previous secret's expiry shown only
// while it still signs.
type groupView struct {
	*models.Group
	SigningSecret           string
	PreviousSecretExpiresAt *string
}

func groupViewOf(g *models.Group) groupView {
	v := groupView{Group: g}
	if exp := g.PreviousSecretExpiresAt; exp != nil && g.PreviousSigningSecret != "" && time.Now().Before(*exp) {
		v.PreviousSecretExpiresAt = fmtTimePtr(exp)
	}
	return v
}

type cursorView struct {
	Queue      int64
	Topic      string
	Offset     int64
	MaxOffset  int64
	Lag        int64
	LagSeconds float64
	OpenHoles  int
	Version    int64
}

func cursorViews(ps []control.CursorPosition, now time.Time) []cursorView {
	out := make([]cursorView, 0, len(ps))
	for _, p := range ps {
		out = append(out, cursorView{Queue: p.QueueID, Topic: p.Topic, Offset: p.Offset, MaxOffset: p.MaxOffset, Lag: p.Lag,
			LagSeconds: control.LagAge(p.OldestUndoneMS, now), OpenHoles: p.Holes, Version: p.Version})
	}
	return out
}

package control

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// AttemptRecord is one delivery attempt with its row id (SearchAttempts).
type AttemptRecord = store.AttemptRecord

// AttemptQuery is an attempt search as transports receive it, every field a query
// parameter's text ("" leaves it out): Status an exact HTTP status (100 to 599),
// StatusClass 2xx, 3xx, 4xx or 5xx (with Status, it must contain it), ErrorClass
// one of delivery.ErrorClasses, Since (inclusive) and Until (exclusive) RFC 3339
// times, Limit (1 to MaxLimit, default DefaultLimit) and Cursor (the NextCursor of
// an earlier page with the same filters). The idea is Svix's list of attempts by
// endpoint.
type AttemptQuery struct {
	Status, StatusClass, ErrorClass string
	Since, Until                    string
	Limit, Cursor                   string
}

// AttemptSearch is a parsed AttemptQuery (ParseAttemptQuery); the zero value lists
// nothing, so use ParseAttemptQuery(AttemptQuery{}) for "every attempt".
type AttemptSearch struct {
	filter store.AttemptFilter
}

// statusClasses maps a status class to its inclusive range.
var statusClasses = map[string][2]int{"2xx": {200, 299}, "3xx": {300, 399}, "4xx": {400, 499}, "5xx": {500, 599}}

// ParseAttemptQuery validates q. Errors are a *models.ValidationError with one entry
// per bad parameter, its pointer the parameter's name (/status, /status_class,
// /error_class, /since, /until, /limit, /cursor).
func ParseAttemptQuery(q AttemptQuery) (AttemptSearch, error) {
	var v models.ValidationError
	f := store.AttemptFilter{Limit: DefaultLimit}
	if q.Status != "" {
		n, err := strconv.Atoi(q.Status)
		if err != nil || n < 100 || n > 599 {
			v.Add("/status", "must be an HTTP status from 100 to 599")
		}
		f.StatusFrom, f.StatusTo = n, n
	}
	if q.StatusClass != "" {
		r, ok := statusClasses[q.StatusClass]
		switch {
		case !ok:
			v.Add("/status_class", "must be 2xx, 3xx, 4xx or 5xx")
		case f.StatusTo != 0 && (f.StatusFrom < r[0] || f.StatusFrom > r[1]):
			v.Add("/status_class", "does not contain status "+q.Status)
		case f.StatusTo == 0:
			f.StatusFrom, f.StatusTo = r[0], r[1]
		}
	}
	if q.ErrorClass != "" {
		if !slices.Contains(delivery.ErrorClasses(), delivery.ErrorClass(q.ErrorClass)) {
			var names []string
			for _, c := range delivery.ErrorClasses() {
				names = append(names, string(c))
			}
			v.Add("/error_class", "must be one of "+strings.Join(names, ", "))
		}
		f.ErrorClass = q.ErrorClass
	}
	var err error
	if f.Since, err = parseTimeParam(q.Since); err != nil {
		v.Add("/since", "must be an RFC 3339 time such as 2026-11-29T14:00:00Z")
	}
	if f.Until, err = parseTimeParam(q.Until); err != nil {
		v.Add("/until", "must be an RFC 3339 time such as 2026-11-29T14:00:00Z")
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		v.Add("/until", "must be after since")
	}
	if q.Limit != "" {
		n, err := strconv.Atoi(q.Limit)
		if err != nil || n < 1 || n > MaxLimit {
			v.Add("/limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
		}
		f.Limit = n
	}
	if q.Cursor != "" {
		p, ok := decodeAttemptCursor(q.Cursor)
		if !ok {
			v.Add("/cursor", "is not one this API returned")
		}
		f.After = &p
	}
	return AttemptSearch{filter: f}, v.Err()
}

// parseTimeParam reads an RFC 3339 time ("" is the zero time).
func parseTimeParam(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// encodeAttemptCursor is the opaque cursor after an attempt: its time (Unix µs) and row id.
func encodeAttemptCursor(p store.AttemptPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.CreatedAt.UnixMicro(), 10) + "." + strconv.FormatInt(p.ID, 10)))
}

func decodeAttemptCursor(s string) (store.AttemptPosition, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.AttemptPosition{}, false
	}
	at, id, ok := strings.Cut(string(b), ".")
	us, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || us < 0 || n <= 0 {
		return store.AttemptPosition{}, false
	}
	return store.AttemptPosition{CreatedAt: time.UnixMicro(us).UTC(), ID: n}, true
}

// SearchAttempts lists group name's delivery attempts matching s, newest first (one
// page; NextCursor continues it while a full page came back). Errors:
// models.ErrNotFound.
func (c *Control) SearchAttempts(ctx context.Context, name string, s AttemptSearch) (Page[AttemptRecord], error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return Page[AttemptRecord]{}, err
	}
	f := s.filter
	if f.Limit == 0 {
		return Page[AttemptRecord]{Items: []AttemptRecord{}}, nil
	}
	f.GroupID = g.ID
	rs, err := c.st.AttemptsSearch(ctx, f)
	if err != nil {
		return Page[AttemptRecord]{}, err
	}
	p := Page[AttemptRecord]{Items: rs}
	if p.Items == nil {
		p.Items = []AttemptRecord{}
	}
	if len(rs) >= f.Limit {
		p.NextCursor = encodeAttemptCursor(rs[len(rs)-1].Position())
	}
	return p, nil
}

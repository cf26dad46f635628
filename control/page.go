package control

import (
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/heraldhq/herald/models"
)

// Paging limits: a list returns DefaultLimit items unless asked for 1 to MaxLimit.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// PageRequest asks for one page of a list: at most Limit items (1 to MaxLimit) after
// the position After that an earlier page's NextCursor encoded (0: from the start).
type PageRequest struct {
	After int64
	Limit int
}

// ParsePage reads a list's limit and cursor parameters as transports receive them
// (empty: DefaultLimit, from the start). Errors are a *models.ValidationError on
// /limit or /cursor.
func ParsePage(limit, cursor string) (PageRequest, error) {
	p := PageRequest{Limit: DefaultLimit}
	var v models.ValidationError
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			v.Add("/limit", fmt.Sprintf("must be between 1 and %d", MaxLimit))
		}
		p.Limit = n
	}
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err == nil {
			p.After, err = strconv.ParseInt(string(b), 10, 64)
		}
		if err != nil {
			v.Add("/cursor", "is not one this API returned")
		}
	}
	return p, v.Err()
}

// Page is one page of a list, in id order. NextCursor is empty on the last page;
// otherwise passing it back (ParsePage) continues after the last item.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// pageOf wraps items read with limit: a full page gets the cursor of its last id.
func pageOf[T any](items []T, limit int, id func(T) int64) Page[T] {
	p := Page[T]{Items: items}
	if p.Items == nil {
		p.Items = []T{}
	}
	if len(items) > 0 && len(items) >= limit {
		p.NextCursor = EncodeCursor(id(items[len(items)-1]))
	}
	return p
}

// EncodeCursor is the opaque cursor of a list position (an id).
func EncodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

// Map converts a page's items with fn, keeping its cursor.
func Map[T, U any](p Page[T], fn func(T) U) Page[U] {
	out := Page[U]{Items: make([]U, 0, len(p.Items)), NextCursor: p.NextCursor}
	for _, x := range p.Items {
		out.Items = append(out.Items, fn(x))
	}
	return out
}

// ParseID reads a numeric id from a path; anything else is what (e.g. "user") not
// found, wrapping models.ErrNotFound.
func ParseID(raw, what string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("no %s %s: %w", what, raw, models.ErrNotFound)
	}
	return id, nil
}

// Package client is Herald's Go client: Publish on the /v1 data plane (with safe
// retries), the /api/v1 control-plane calls the herald CLI is built on, and the
// receiver side of a delivery (Verifier, ParseDelivery, PartialFailure, Handler).
// It imports no Herald package, so programs outside the module can use it alone.
//
// A Client is safe for concurrent use. Errors from Herald are *Error values that
// match the sentinels ErrNotFound, ErrConflict, ErrUnauthorized, ErrForbidden,
// ErrInvalid, ErrRateLimited and ErrUnavailable with errors.Is.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the address of a Herald api started with its defaults.
const DefaultURL = "http://127.0.0.1:8080"

// Client talks to one Herald api. Create it with New.
type Client struct {
	base    string
	http    *http.Client
	token   string // admin JWT for /api/v1
	apiKey  string // hk_… key for /v1
	retries int
	backoff time.Duration
	sleep   func(context.Context, time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the admin JWT sent to /api/v1 (from Login or Refresh).
func WithToken(jwt string) Option { return func(c *Client) { c.token = jwt } }

// WithAPIKey sets the publisher's API key (hk_…) sent to /v1.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithHTTPClient replaces the HTTP client (default: one with a 30 s timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetries sets how often Publish retries a 429, a 5xx or a transport error
// (default 4) and the first wait (default 200 ms, doubled per retry up to 10 s;
// a Retry-After answer sets the wait instead, at most 1 min).
func WithRetries(n int, first time.Duration) Option {
	return func(c *Client) { c.retries, c.backoff = n, first }
}

// New returns a client for the api at baseURL (e.g. DefaultURL).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Timeout: 30 * time.Second},
		retries: 4, backoff: 200 * time.Millisecond, sleep: sleepCtx}
	for _, o := range opts {
		o(c)
	}
	return c
}

// SetToken replaces the admin JWT, e.g. after Refresh. Not safe concurrently with calls.
func (c *Client) SetToken(jwt string) { c.token = jwt }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// The sentinels an *Error matches with errors.Is, by HTTP status.
var (
	// ErrNotFound: 404, no such topic, group, key or dead letter.
	ErrNotFound = errors.New("not found")
	// ErrConflict: 409, a name taken or a resource still in use.
	ErrConflict = errors.New("conflict")
	// ErrUnauthorized: 401, missing, expired or revoked credentials.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: 403, the credentials do not allow the action.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: 400 or 422, the request has invalid fields (see Error.Errors).
	ErrInvalid = errors.New("invalid request")
	// ErrRateLimited: 429, too many requests.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: 503, Herald cannot take the request right now (see Error.RetryAfter).
	ErrUnavailable = errors.New("unavailable")
)

// FieldError is one invalid field of a request, by JSON pointer (e.g. /name).
type FieldError struct {
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
}

// Error is an answer of Herald that is not a success: an RFC 9457 problem.
// Kind is the stable suffix of its type (e.g. "validation", "in-use");
// RetryAfter is the server's Retry-After (0 when absent).
type Error struct {
	Status     int
	Kind       string
	Title      string
	Detail     string
	Errors     []FieldError
	RetryAfter time.Duration
}

// Error spells the problem as "404 not-found: no topic named x", and a problem
// with field errors as "422 validation: /name: … ; /batch_size: …", each field
// error once: a detail that only sums them up (Herald's "/name: … (and 1 more)")
// gives way to the list, one that says more is kept before it.
func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	if len(e.Errors) > 0 {
		var fields []string
		for _, f := range e.Errors {
			fields = append(fields, f.Pointer+": "+f.Detail)
		}
		if msg == "" || strings.HasPrefix(msg, fields[0]) {
			msg = strings.Join(fields, "; ")
		} else {
			for _, f := range fields {
				if !strings.Contains(msg, f) {
					msg += "; " + f
				}
			}
		}
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Kind, msg)
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusForbidden:
		return target == ErrForbidden
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return target == ErrInvalid
	case http.StatusTooManyRequests:
		return target == ErrRateLimited
	case http.StatusServiceUnavailable:
		return target == ErrUnavailable
	}
	return false
}

// retryable reports whether a publish answered with status may be sent again.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

func newError(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode, Kind: "http", Title: http.StatusText(resp.StatusCode)}
	var p struct {
		Type   string       `json:"type"`
		Title  string       `json:"title"`
		Detail string       `json:"detail"`
		Errors []FieldError `json:"errors"`
	}
	if json.Unmarshal(body, &p) == nil && p.Type != "" {
		e.Kind = p.Type[strings.LastIndexByte(p.Type, '/')+1:]
		e.Title, e.Detail, e.Errors = p.Title, p.Detail, p.Errors
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// parseRetryAfter reads seconds or an HTTP date; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// request is one call: the body is marshalled once, so a retry sends the same bytes.
type request struct {
	method, path string
	query        url.Values
	body         any
	header       http.Header
	bearer       string
}

// do sends r once and decodes a 2xx JSON answer into out (if not nil).
func (c *Client) do(ctx context.Context, r request, out any) error {
	_, err := c.doResp(ctx, r, out)
	return err
}

// doResp is do, also returning the answer (its body already read).
func (c *Client) doResp(ctx context.Context, r request, out any) (*http.Response, error) {
	var payload []byte
	if r.body != nil {
		if err := checkText(r.body); err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", r.method, r.path, err)
		}
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", r.method, r.path, err)
		}
	}
	if r.bearer == "" {
		r.bearer = c.token
	}
	resp, body, err := c.send(ctx, r, payload)
	if err != nil {
		return nil, err
	}
	if out != nil && len(body) > 0 {
		if err := json.Unmarshal(body, out); err != nil {
			return nil, fmt.Errorf("decode %s %s: %w", r.method, r.path, err)
		}
	}
	return resp, nil
}

// send performs one HTTP exchange; a non-2xx answer is an *Error.
func (c *Client) send(ctx context.Context, r request, payload []byte) (*http.Response, []byte, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if r.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+r.bearer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return resp, nil, fmt.Errorf("%s %s: read answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, body, newError(resp, body)
	}
	return resp, body, nil
}

// ListOptions pages a list: Limit items (default 50, at most 500) after Cursor
// (a Page's NextCursor; "" for the first page).
type ListOptions struct {
	Limit  int
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// Page is one page of a list; NextCursor is "" on the last page.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// pathEscape escapes a name for one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }

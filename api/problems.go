package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
)

// ProblemBase prefixes every problem type URI; the suffix is the stable kind.
const ProblemBase = "https://herald.dev/problems/"

// ProblemKind is the stable suffix of a problem's type URI. Kinds are part of the API
// contract: clients branch on them, so a kind is never renamed. Every kind has a
// status and title in problemKinds (TestProblemKindsComplete holds that).
type ProblemKind string

// The problem kinds Herald answers with.
const (
	// ProblemMalformedRequest (400): the body is not valid JSON of the expected shape.
	ProblemMalformedRequest ProblemKind = "malformed-request"
	// ProblemUnauthorized (401): missing or invalid credentials.
	ProblemUnauthorized ProblemKind = "unauthorized"
	// ProblemForbidden (403): the credentials do not allow this action.
	ProblemForbidden ProblemKind = "forbidden"
	// ProblemNotFound (404): no such resource or route.
	ProblemNotFound ProblemKind = "not-found"
	// ProblemTopicNotFound (404): a publish names a topic that does not exist.
	ProblemTopicNotFound ProblemKind = "topic-not-found"
	// ProblemMethodNotAllowed (405): the path exists with other methods.
	ProblemMethodNotAllowed ProblemKind = "method-not-allowed"
	// ProblemConflict (409): the name is already taken.
	ProblemConflict ProblemKind = "conflict"
	// ProblemInUse (409): the resource is still referenced, e.g. a subscribed topic.
	ProblemInUse ProblemKind = "in-use"
	// ProblemLastAdmin (409): the change would leave no admin.
	ProblemLastAdmin ProblemKind = "last-admin"
	// ProblemReadOnlyField (422): a PATCH changes a field that has its own action.
	ProblemReadOnlyField ProblemKind = "read-only-field"
	// ProblemPayloadTooLarge (413): the request or a message is too large.
	ProblemPayloadTooLarge ProblemKind = "payload-too-large"
	// ProblemUnsupportedMediaType (415): unsupported Content-Type or Content-Encoding.
	ProblemUnsupportedMediaType ProblemKind = "unsupported-media-type"
	// ProblemValidation (422): invalid fields, listed by JSON pointer in errors.
	ProblemValidation ProblemKind = "validation"
	// ProblemUnknownField (422): a field this endpoint does not know.
	ProblemUnknownField ProblemKind = "unknown-field"
	// ProblemIdempotencyMismatch (422): an Idempotency-Key reused with another body.
	ProblemIdempotencyMismatch ProblemKind = "idempotency-mismatch"
	// ProblemBlockedEndpoint (422): the endpoint address is private, loopback,
	// link-local or metadata: the SSRF guard refused it.
	ProblemBlockedEndpoint ProblemKind = "blocked-endpoint"
	// ProblemRateLimited (429): too many requests, e.g. login attempts.
	ProblemRateLimited ProblemKind = "rate-limited"
	// ProblemQueueUnavailable (503): the key's queue cannot take writes right now.
	ProblemQueueUnavailable ProblemKind = "queue-unavailable"
	// ProblemUnavailable (503): MySQL or Redis cannot be reached.
	ProblemUnavailable ProblemKind = "unavailable"
	// ProblemUnknownNode (422): a move names a db node that does not exist.
	ProblemUnknownNode ProblemKind = "unknown-node"
	// ProblemNodeNotWritable (409): a move's target node does not take new queues,
	// or no node is read-write to place a topic's queues on.
	ProblemNodeNotWritable ProblemKind = "node-not-writable"
	// ProblemTopicMoving (409): an earlier move of the topic is not finished, or a
	// concurrent move of it won; a drain answers it for a topic it could not move.
	ProblemTopicMoving ProblemKind = "topic-moving"
	// ProblemNothingToMove (422): no live queue to move.
	ProblemNothingToMove ProblemKind = "nothing-to-move"
	// ProblemNotBuilt (422): the request needs something Herald does not do yet.
	ProblemNotBuilt ProblemKind = "not-built"
	// ProblemInternal (500): anything else; the detail is logged, not shown.
	ProblemInternal ProblemKind = "internal"
)

// problemKinds gives each kind its status and title.
var problemKinds = map[ProblemKind]struct {
	status int
	title  string
}{
	ProblemMalformedRequest:     {http.StatusBadRequest, "The request body is not valid JSON of the expected shape"},
	ProblemUnauthorized:         {http.StatusUnauthorized, "Missing or invalid credentials"},
	ProblemForbidden:            {http.StatusForbidden, "The credentials do not allow this action"},
	ProblemNotFound:             {http.StatusNotFound, "No such resource"},
	ProblemTopicNotFound:        {http.StatusNotFound, "No such topic"},
	ProblemMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed"},
	ProblemConflict:             {http.StatusConflict, "The name is already taken"},
	ProblemInUse:                {http.StatusConflict, "The resource is still in use"},
	ProblemLastAdmin:            {http.StatusConflict, "At least one admin must remain"},
	ProblemReadOnlyField:        {http.StatusUnprocessableEntity, "The request changes a field that cannot be changed"},
	ProblemPayloadTooLarge:      {http.StatusRequestEntityTooLarge, "The request or a message is too large"},
	ProblemUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported Content-Type or Content-Encoding"},
	ProblemValidation:           {http.StatusUnprocessableEntity, "The request has invalid fields"},
	ProblemUnknownField:         {http.StatusUnprocessableEntity, "The request has a field this endpoint does not know"},
	ProblemIdempotencyMismatch:  {http.StatusUnprocessableEntity, "Idempotency-Key reused with a different request body"},
	ProblemBlockedEndpoint:      {http.StatusUnprocessableEntity, "The endpoint address is not allowed"},
	ProblemRateLimited:          {http.StatusTooManyRequests, "Too many requests"},
	ProblemQueueUnavailable:     {http.StatusServiceUnavailable, "The key's queue cannot take writes right now"},
	ProblemUnavailable:          {http.StatusServiceUnavailable, "Herald cannot store messages right now"},
	ProblemUnknownNode:          {http.StatusUnprocessableEntity, "No such db node"},
	ProblemNodeNotWritable:      {http.StatusConflict, "The db node does not take new queues"},
	ProblemTopicMoving:          {http.StatusConflict, "The topic is already moving"},
	ProblemNothingToMove:        {http.StatusUnprocessableEntity, "Nothing to move"},
	ProblemNotBuilt:             {http.StatusUnprocessableEntity, "Not built yet"},
	ProblemInternal:             {http.StatusInternalServerError, "Internal error"},
}

// ProblemKinds lists every kind, for tests and documentation.
func ProblemKinds() []ProblemKind {
	out := make([]ProblemKind, 0, len(problemKinds))
	for k := range problemKinds {
		out = append(out, k)
	}
	return out
}

// Problem is an RFC 9457 problem detail, served as application/problem+json.
// Type is ProblemBase + a stable kind (e.g. "validation"); Errors lists invalid
// fields by JSON pointer for validation problems.
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Detail string              `json:"detail,omitempty"`
	Errors []models.FieldError `json:"errors,omitempty"`
}

// Error lets a *Problem travel as an error through Echo handlers.
func (p *Problem) Error() string { return p.Title + ": " + p.Detail }

// problem builds a Problem of kind.
func problem(kind ProblemKind, detail string) *Problem {
	k, ok := problemKinds[kind]
	if !ok {
		kind, k = ProblemInternal, problemKinds[ProblemInternal]
	}
	return &Problem{Type: ProblemBase + string(kind), Title: k.title, Status: k.status, Detail: detail}
}

// sentinelKinds maps models sentinels to their kind, in the order they are tested.
var sentinelKinds = []struct {
	err  error
	kind ProblemKind
}{
	{control.ErrUnknownNode, ProblemUnknownNode},
	{control.ErrNodeNotWritable, ProblemNodeNotWritable},
	{models.ErrNoWritableNode, ProblemNodeNotWritable},
	{control.ErrTopicMoving, ProblemTopicMoving},
	{control.ErrNothingToMove, ProblemNothingToMove},
	{control.ErrNotBuilt, ProblemNotBuilt},
	{models.ErrNotFound, ProblemNotFound},
	{models.ErrConflict, ProblemConflict},
	{models.ErrInUse, ProblemInUse},
	{models.ErrLastAdmin, ProblemLastAdmin},
	{models.ErrUnauthorized, ProblemUnauthorized},
	{models.ErrForbidden, ProblemForbidden},
	{models.ErrRateLimited, ProblemRateLimited},
	{models.ErrIdempotencyMismatch, ProblemIdempotencyMismatch},
	{models.ErrQueueUnavailable, ProblemQueueUnavailable},
}

// fromError translates models errors into problems.
func fromError(err error) *Problem {
	var p *Problem
	var v *models.ValidationError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, ssrf.ErrBlocked) && errors.As(err, &v):
		p := problem(ProblemBlockedEndpoint, err.Error())
		p.Errors = v.Errors
		return p
	case errors.As(err, &v):
		p := problem(ProblemValidation, v.Error())
		p.Errors = v.Errors
		return p
	}
	for _, s := range sentinelKinds {
		if errors.Is(err, s.err) {
			return problem(s.kind, err.Error())
		}
	}
	switch {
	case errors.Is(err, models.ErrInvalid):
		return problem(ProblemValidation, err.Error())
	case control.Unavailable(err):
		return problem(ProblemUnavailable, "the database did not answer in time; retry shortly")
	case errors.Is(err, context.Canceled):
		return problem(ProblemUnavailable, "the request was cancelled")
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return problem(ProblemNotFound, "no route for this path")
		case http.StatusMethodNotAllowed:
			return problem(ProblemMethodNotAllowed, "")
		case http.StatusRequestEntityTooLarge:
			return problem(ProblemPayloadTooLarge, "")
		case http.StatusUnauthorized:
			return problem(ProblemUnauthorized, "")
		}
		return &Problem{Type: ProblemBase + "http", Title: http.StatusText(he.Code), Status: he.Code}
	}
	return problem(ProblemInternal, "")
}

// RetryAfterSeconds is the Retry-After every 503 carries: how long a client should
// wait before retrying while the database or a queue cannot take the request.
const RetryAfterSeconds = 2

// writeProblem is Echo's HTTPErrorHandler: every error leaves as problem+json. A 503
// carries Retry-After and is logged as a warning (the database or a client, not
// Herald, is at fault); other 5xx are logged as errors.
func (s *Server) writeProblem(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := fromError(err)
	switch {
	case p.Status == http.StatusServiceUnavailable:
		c.Response().Header().Set("Retry-After", retryAfter(p))
		s.log.Warn("request unavailable", "method", c.Request().Method, "path", c.Path(), "err", err)
	case p.Status >= 500:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	b, _ := json.Marshal(p)
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	c.Response().WriteHeader(p.Status)
	_, _ = c.Response().Write(b)
}

// retryAfter is the Retry-After (seconds) of a 503: 5 s while a topic's queues
// take no writes (an operator's change), RetryAfterSeconds (2 s) when MySQL or Redis
// failed or did not answer in time.
func retryAfter(p *Problem) string {
	if p.Type == ProblemBase+string(ProblemQueueUnavailable) {
		return "5"
	}
	return strconv.Itoa(RetryAfterSeconds)
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// ProblemBase prefixes every problem type URI; the suffix is the stable kind.
const ProblemBase = "https://herald.dev/problems/"

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

// Problem kinds with their status and title. Kinds are part of the API contract.
var problemKinds = map[string]struct {
	status int
	title  string
}{
	"malformed-request":      {http.StatusBadRequest, "The request body is not valid JSON of the expected shape"},
	"unauthorized":           {http.StatusUnauthorized, "Missing or invalid credentials"},
	"forbidden":              {http.StatusForbidden, "The credentials do not allow this action"},
	"not-found":              {http.StatusNotFound, "No such resource"},
	"topic-not-found":        {http.StatusNotFound, "No such topic"},
	"method-not-allowed":     {http.StatusMethodNotAllowed, "Method not allowed"},
	"conflict":               {http.StatusConflict, "The name is already taken"},
	"in-use":                 {http.StatusConflict, "The resource is still in use"},
	"last-admin":             {http.StatusConflict, "At least one admin must remain"},
	"read-only-field":        {http.StatusUnprocessableEntity, "The request changes a field that cannot be changed"},
	"payload-too-large":      {http.StatusRequestEntityTooLarge, "The request or a message is too large"},
	"unsupported-media-type": {http.StatusUnsupportedMediaType, "Unsupported Content-Type or Content-Encoding"},
	"validation":             {http.StatusUnprocessableEntity, "The request has invalid fields"},
	"unknown-field":          {http.StatusUnprocessableEntity, "The request has a field this endpoint does not know"},
	"idempotency-mismatch":   {http.StatusUnprocessableEntity, "Idempotency-Key reused with a different request body"},
	"blocked-endpoint":       {http.StatusUnprocessableEntity, "The endpoint address is not allowed"},
	"rate-limited":           {http.StatusTooManyRequests, "Too many requests"},
	"queue-unavailable":      {http.StatusServiceUnavailable, "The key's queue cannot take writes right now"},
	"unavailable":            {http.StatusServiceUnavailable, "Herald cannot store messages right now"},
	"internal":               {http.StatusInternalServerError, "Internal error"},
}

// problem builds a Problem of a known kind.
func problem(kind, detail string) *Problem {
	k, ok := problemKinds[kind]
	if !ok {
		k = problemKinds["internal"]
	}
	return &Problem{Type: ProblemBase + kind, Title: k.title, Status: k.status, Detail: detail}
}

func validationProblem(v *models.ValidationError) *Problem {
	p := problem("validation", v.Error())
	p.Errors = v.Errors
	return p
}

// fromError translates models errors into problems.
func fromError(err error) *Problem {
	var p *Problem
	var v *models.ValidationError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &v):
		return validationProblem(v)
	case errors.Is(err, models.ErrNotFound):
		return problem("not-found", err.Error())
	case errors.Is(err, models.ErrConflict):
		return problem("conflict", err.Error())
	case errors.Is(err, models.ErrInUse):
		return problem("in-use", err.Error())
	case errors.Is(err, models.ErrLastAdmin):
		return problem("last-admin", err.Error())
	case errors.Is(err, models.ErrUnauthorized):
		return problem("unauthorized", err.Error())
	case errors.Is(err, models.ErrForbidden):
		return problem("forbidden", err.Error())
	case errors.Is(err, models.ErrIdempotencyMismatch):
		return problem("idempotency-mismatch", err.Error())
	case errors.Is(err, models.ErrQueueUnavailable):
		return problem("queue-unavailable", err.Error())
	case errors.Is(err, models.ErrInvalid):
		return problem("validation", err.Error())
	case store.Unavailable(err):
		return problem("unavailable", "the database did not answer in time; retry shortly")
	case errors.Is(err, context.Canceled):
		return problem("unavailable", "the request was cancelled")
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return problem("not-found", "no route for this path")
		case http.StatusMethodNotAllowed:
			return problem("method-not-allowed", "")
		case http.StatusRequestEntityTooLarge:
			return problem("payload-too-large", "")
		case http.StatusUnauthorized:
			return problem("unauthorized", "")
		}
		return &Problem{Type: ProblemBase + "http", Title: http.StatusText(he.Code), Status: he.Code}
	}
	return problem("internal", "")
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
		c.Response().Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		s.log.Warn("request unavailable", "method", c.Request().Method, "path", c.Path(), "err", err)
	case p.Status >= 500:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	b, _ := json.Marshal(p)
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	c.Response().WriteHeader(p.Status)
	_, _ = c.Response().Write(b)
}

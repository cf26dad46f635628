package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/models"
)

// publishDeadline gives every /v1 request Options.PublishTimeout (default 10 s) to finish
// its database work, so a stalled database answers 503 instead of holding the
// publisher.
func (s *Server) publishDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		d := s.opts.PublishTimeout
		if d <= 0 {
			d = groupcommit.DefaultFlushTimeout
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), d)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// publishFailed answers a publish whose Submit failed, saying what is known: when
// the commit's outcome is unknown (deadline or a client that went away after the
// flush took the request) the messages may be stored, and a retry with the same
// Idempotency-Key is safe; when the database refused or did not answer before the
// flush, nothing was stored. Either way 503 with Retry-After.
func (s *Server) publishFailed(ctx context.Context, topic string, idempotent bool, err error) error {
	clientGone := errors.Is(ctx.Err(), context.Canceled)
	switch {
	case errors.Is(err, groupcommit.ErrOutcomeUnknown), errors.Is(err, models.ErrOutcomeUnknown):
		s.log.Warn("publish outcome unknown", "topic", topic, "client_gone", clientGone, "idempotency_key", idempotent, "err", err)
		return problem(ProblemUnavailable, "the database did not confirm the commit in time; the messages may have been stored: retry with the same Idempotency-Key")
	case errors.Is(err, models.ErrQueueUnavailable):
		// A db node holding the request's queues did not answer (a connection cut at
		// the commit leaves the outcome unknown: the Idempotency-Key makes a retry safe).
		s.log.Warn("publish not stored: db node unavailable", "topic", topic, "err", err)
		return fmt.Errorf("the queue's db node did not answer: %w", models.ErrQueueUnavailable)
	case clientGone:
		s.log.Info("publish abandoned by its client before it was stored", "topic", topic)
		return problem(ProblemUnavailable, "the request was cancelled before the messages were stored")
	case control.Unavailable(err), errors.Is(err, groupcommit.ErrClosed):
		s.log.Warn("publish not stored", "topic", topic, "err", err)
	default:
		s.log.Error("publish failed", "topic", topic, "err", err)
	}
	return &Problem{Type: ProblemBase + string(ProblemUnavailable), Title: problemKinds[ProblemUnavailable].title, Status: http.StatusServiceUnavailable,
		Detail: "the messages were not stored; retry the request in " + (RetryAfterSeconds * time.Second).String()}
}

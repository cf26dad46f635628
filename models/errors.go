package models

import "errors"

// Sentinel errors shared by the store and the transports. The api package
// maps each to a problem+json type; wrap them with context, never replace them.
var (
	// ErrNotFound means the named topic, group, user, key or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique name is already taken.
	ErrConflict = errors.New("already exists")
	// ErrInvalid means input failed validation; a *ValidationError carries the details.
	ErrInvalid = errors.New("invalid input")
	// ErrQueueUnavailable means a keyed message's queue cannot take writes (read-only), so
	// the request fails with 503 rather than breaking per-key order.
	ErrQueueUnavailable = errors.New("queue unavailable")
	// ErrOutcomeUnknown means a write's commit was asked for but its answer never
	// came (a cross-node request whose decision row or branch commit went
	// unanswered): it may have been stored, whole, or not at all, and recovery
	// settles which; a retry with the same Idempotency-Key answers truthfully.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrQueueSealed means an insert hit a sealed queue (a move sealed it after the
	// writer read its topic): the writer reloads the topic and sends the request
	// again on the new slot map.
	ErrQueueSealed = errors.New("queue sealed")
	// ErrIdempotencyMismatch means an Idempotency-Key was reused with a different request body.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrMigrationsPending means the database schema is behind the binary; run `herald migrate up`.
	ErrMigrationsPending = errors.New("migrations pending: run `herald migrate up`")
	// ErrUnauthorized means credentials are missing, malformed, expired or revoked.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means the credentials are valid but do not grant the action.
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited means the caller made too many attempts (e.g. logins) and must wait.
	ErrRateLimited = errors.New("rate limited")
	// ErrInUse means the resource is still referenced and cannot be removed, e.g. a
	// topic some group subscribes to.
	ErrInUse = errors.New("still in use")
	// ErrLastAdmin means the change would leave no admin user.
	ErrLastAdmin = errors.New("at least one admin must remain")
)

// FieldError names one invalid field by its JSON pointer (RFC 6901), e.g.
// "/messages/17/body", with a human-readable detail.
type FieldError struct {
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
}

// ValidationError lists every invalid field of one input. It unwraps to ErrInvalid.
type ValidationError struct {
	Errors []FieldError
}

// Error joins the first field error with a count of the rest.
func (e *ValidationError) Error() string {
	if len(e.Errors) == 0 {
		return "invalid input"
	}
	s := e.Errors[0].Pointer + ": " + e.Errors[0].Detail
	if n := len(e.Errors) - 1; n > 0 {
		s += " (and " + itoa(n) + " more)"
	}
	return s
}

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Add appends one field error.
func (e *ValidationError) Add(pointer, detail string) {
	e.Errors = append(e.Errors, FieldError{Pointer: pointer, Detail: detail})
}

// Err returns e when it holds errors and nil otherwise.
func (e *ValidationError) Err() error {
	if e == nil || len(e.Errors) == 0 {
		return nil
	}
	return e
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

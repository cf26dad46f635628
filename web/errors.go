package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// pageError is a console failure with its HTTP status and a line for the person.
type pageError struct {
	status int
	detail string
}

// Error is the line shown to the person.
func (e *pageError) Error() string { return e.detail }

// failure returns a pageError.
func failure(status int, detail string) error { return &pageError{status: status, detail: detail} }

// sentinelStatus maps models sentinels to a status and a page title.
var sentinelStatus = []struct {
	err    error
	status int
	title  string
}{
	{models.ErrNotFound, http.StatusNotFound, "No such resource"},
	{models.ErrConflict, http.StatusConflict, "The name is already taken"},
	{models.ErrInUse, http.StatusConflict, "The resource is still in use"},
	{models.ErrLastAdmin, http.StatusConflict, "At least one admin must remain"},
	{models.ErrUnauthorized, http.StatusUnauthorized, "Missing or invalid credentials"},
	{models.ErrForbidden, http.StatusForbidden, "The credentials do not allow this action"},
	{models.ErrInvalid, http.StatusUnprocessableEntity, "The request has invalid fields"},
	{control.ErrUnknownNode, http.StatusUnprocessableEntity, "No such db node"},
	{control.ErrNodeNotWritable, http.StatusConflict, "The db node does not take new queues"},
	{models.ErrNoWritableNode, http.StatusConflict, "No db node takes new queues"},
	{control.ErrTopicMoving, http.StatusConflict, "The topic is already moving"},
	{control.ErrNothingToMove, http.StatusUnprocessableEntity, "Nothing to move"},
	{control.ErrNotBuilt, http.StatusUnprocessableEntity, "Not built yet"},
}

// describe turns an error into the status, title and detail of the error page.
func describe(err error) (status int, title, detail string) {
	var pe *pageError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &pe):
		return pe.status, http.StatusText(pe.status), pe.detail
	case errors.As(err, &he):
		return he.Code, http.StatusText(he.Code), ""
	}
	for _, s := range sentinelStatus {
		if errors.Is(err, s.err) {
			return s.status, s.title, err.Error()
		}
	}
	return http.StatusInternalServerError, "Internal error", ""
}

// formErrors splits an action's error into field errors (JSON pointer → detail) for
// the form and a page-level line; ok is false for errors that are not the user's.
func formErrors(err error) (fields map[string]string, line string, ok bool) {
	status, _, detail := describe(err)
	if status >= 500 {
		return nil, "", false
	}
	fields = map[string]string{}
	var v *models.ValidationError
	if errors.As(err, &v) {
		for _, fe := range v.Errors {
			fields[firstSegment(fe.Pointer)] = fe.Detail
		}
	}
	return fields, detail, true
}

// rerender answers an action's error: a mistake of the person shows the form again
// through page, with the field errors and the page-level line; anything else fails.
func rerender(err error, page func(fields map[string]string, line string) error) error {
	fields, line, ok := formErrors(err)
	if !ok {
		return err
	}
	return page(fields, line)
}

// firstSegment maps "/subscriptions/0/topic" to "/subscriptions", the form field.
func firstSegment(pointer string) string {
	if i := strings.Index(pointer[min(1, len(pointer)):], "/"); i >= 0 {
		return pointer[:i+1]
	}
	return pointer
}

package api

import (
	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// listPage reads ?limit= (default 50, max 500) and ?cursor= (an opaque id).
func listPage(c echo.Context) (control.PageRequest, error) {
	return control.ParsePage(c.QueryParam("limit"), c.QueryParam("cursor"))
}

// listResponse is every list's body: one page of items and the cursor of the next
// page ("" on the last).
type listResponse[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// listOf converts a page of control items into a list body with fn.
func listOf[T, U any](p control.Page[T], fn func(T) U) listResponse[U] {
	m := control.Map(p, fn)
	return listResponse[U]{Items: m.Items, NextCursor: m.NextCursor}
}

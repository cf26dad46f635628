package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

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

// respondList answers a list request: the page ?limit= and ?cursor= ask for, each
// item shown with view.
func respondList[T, U any](c echo.Context, fetch func(context.Context, control.PageRequest) (control.Page[T], error), view func(T) U) error {
	p, err := listPage(c)
	if err != nil {
		return err
	}
	page, err := fetch(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listOf(page, view))
}

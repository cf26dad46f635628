package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

// MaxFormBytes caps a console form body (64 KiB); larger posts answer 413 before
// anything reads them. Go's own cap for url-encoded forms is 10 MB.
const MaxFormBytes = 64 << 10

// limitForm bounds console POST bodies to MaxFormBytes and parses the form once, so
// the CSRF check and the handler read the same bounded values.
func limitForm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodPost {
			return next(c)
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, MaxFormBytes)
		if err := req.ParseForm(); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return failure(http.StatusRequestEntityTooLarge, fmt.Sprintf("forms are limited to %d bytes", MaxFormBytes))
			}
			return failure(http.StatusBadRequest, "form: "+err.Error())
		}
		return next(c)
	}
}

// validPathNames answers 404 for a :topic or :group path parameter that cannot name
// anything (control.CheckPathNames), before any handler looks it up.
func validPathNames(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := control.CheckPathNames(c.Param); err != nil {
			return err
		}
		return next(c)
	}
}

// asPage makes a middleware's refusals console pages (consolePage) rather than bare
// errors for the HTTP server's problem+json handler.
func (s *Console) asPage(mw echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc { return s.consolePage(mw(next)) }
}

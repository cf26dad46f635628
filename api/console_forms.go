package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
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
				return problem("payload-too-large", fmt.Sprintf("forms are limited to %d bytes", MaxFormBytes))
			}
			return problem("malformed-request", "form: "+err.Error())
		}
		return next(c)
	}
}

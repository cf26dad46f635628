package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/metrics"
)

// observeRequests records every answered request in metrics.APIRequests and
// metrics.APIRequestDuration, labelled by the route template Echo matched (never
// the raw path, so series stay bounded by the route table). A handler's error is
// written here (the problem+json answer) so the status recorded is the one sent.
func observeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "/*"
		}
		metrics.ObserveAPIRequest(route, c.Request().Method, c.Response().Status, time.Since(start).Seconds())
		return nil
	}
}

package api

import (
	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

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

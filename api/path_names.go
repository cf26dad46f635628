package api

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// validPathNames answers 404 for a :topic or :group path parameter that cannot name
// anything, before any handler looks it up.
func validPathNames(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for _, p := range [...]string{"topic", "group"} {
			if v := c.Param(p); v != "" && !models.PossibleName(v) {
				return problem(ProblemNotFound, "no "+p+" named "+strconv.QuoteToASCII(v))
			}
		}
		return next(c)
	}
}

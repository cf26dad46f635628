package api

import (
	"strconv"

	"github.com/labstack/echo/v4"
)

// maxPathNameBytes is the longest topic or group name a URL can hold: a group name
// (120 bytes) plus the dead-letter suffix.
const maxPathNameBytes = 124

// pathNameOK reports whether s could name a stored topic or group: lower-case ASCII
// letters, digits, '.', '_' and '-', starting with a letter or digit. Anything else
// cannot exist, and must not reach SQL, where a non-ASCII value against the ASCII
// name columns fails with "Illegal mix of collations".
func pathNameOK(s string) bool {
	if s == "" || len(s) > maxPathNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9':
		case (b == '.' || b == '_' || b == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// validPathNames answers 404 for a :topic or :group path parameter that cannot name
// anything, before any handler looks it up.
func validPathNames(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for _, p := range [...]string{"topic", "group"} {
			if v := c.Param(p); v != "" && !pathNameOK(v) {
				return problem("not-found", "no "+p+" named "+strconv.QuoteToASCII(v))
			}
		}
		return next(c)
	}
}

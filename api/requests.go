package api

import (
	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// bodyOf reads a JSON body of at most limit bytes into v, refusing unknown fields.
func bodyOf(c echo.Context, limit int64, v any) error {
	body, err := readBody(c, limit)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// optionalBody decodes an optional JSON body into v: none at all (no length and no
// Content-Type, or an empty body) leaves v as it is.
func optionalBody(c echo.Context, limit int64, v any) error {
	r := c.Request()
	if r.ContentLength == 0 || (r.ContentLength < 0 && r.Header.Get(echo.HeaderContentType) == "") {
		return nil
	}
	body, err := readBody(c, limit)
	if err != nil || len(body) == 0 {
		return err
	}
	return decodeStrict(body, v)
}

// actor is who the audit log names for this request: the signed-in user (or
// "system") and the client address.
func actor(c echo.Context) control.Actor {
	u, _ := c.Get("user").(*models.User)
	return control.ActorOf(u, c.RealIP(), "")
}

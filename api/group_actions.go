package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/models"
)

// Secret rotation overlap bounds, in seconds: by default the previous secret keeps
// signing for 24 h (as Svix), at most 7 days; 0 retires it at once.
const (
	DefaultSecretOverlapSeconds = 86400
	MaxSecretOverlapSeconds     = 7 * 86400
)

// secretRotateRequest optionally sets how long the previous secret keeps signing.
type secretRotateRequest struct {
	OverlapSeconds *int `json:"overlap_seconds"`
}

func (s *Server) groupSecretRotate(c echo.Context) error {
	var req secretRotateRequest
	if err := optionalBody(c, 4<<10, &req); err != nil {
		return err
	}
	g, err := s.rotateSecret(c, c.Param("group"), orDefault(req.OverlapSeconds, DefaultSecretOverlapSeconds))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, groupDTO(g))
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

// rotateSecret gives the group a new signing secret; the old one keeps signing for
// overlap seconds. Workers pick it up within a second (config_version bump). Audited
// as a secret rotation. Shared by the API and the console.
func (s *Server) rotateSecret(c echo.Context, name string, overlap int) (*models.Group, error) {
	ctx := c.Request().Context()
	if overlap < 0 || overlap > MaxSecretOverlapSeconds {
		return nil, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/overlap_seconds", Detail: "must be between 0 and 604800 seconds"}}}
	}
	g, err := s.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	expires := time.Now().Add(time.Duration(overlap) * time.Second)
	if err := s.st.GroupRotateSecret(ctx, g.ID, signing.NewSecret(), expires); err != nil {
		return nil, err
	}
	_ = s.notifier.Group(ctx, g.ID)
	s.audit(c, "group.secret.rotate", g.Name, nil, map[string]any{"overlap_seconds": overlap, "previous_secret_expires_at": expires.UTC().Format(timeFormat)})
	return s.st.GroupGetByID(ctx, g.ID)
}

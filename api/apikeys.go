package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// APIKeyDTO is an API key; Key is present only in the response that created it.
type APIKeyDTO struct {
	ID         int64    `json:"id"`
	Name       string   `json:"name"`
	Key        string   `json:"key,omitempty"`
	Prefix     string   `json:"prefix"`
	Topics     []string `json:"topics"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
	RevokedAt  *string  `json:"revoked_at"`
}

// apiKeyDTO shows a stored key: never the key itself, only its prefix, scopes, last
// use (updated at most once per cache period, 5 s) and revocation time.
func apiKeyDTO(k *models.APIKey) APIKeyDTO {
	d := APIKeyDTO{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Topics: k.Topics, CreatedAt: k.CreatedAt.UTC().Format(control.TimeFormat),
		LastUsedAt: fmtTime(k.LastUsedAt), RevokedAt: fmtTime(k.RevokedAt)}
	if d.Topics == nil {
		d.Topics = []string{}
	}
	return d
}

type apiKeyCreateRequest struct {
	Name   string   `json:"name"`
	Topics []string `json:"topics"`
}

func (s *Server) apiKeyCreate(c echo.Context) error {
	var req apiKeyCreateRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	key, k, err := s.ctl.CreateAPIKey(c.Request().Context(), actor(c), control.APIKeySpec{Name: req.Name, Topics: req.Topics})
	if err != nil {
		return err
	}
	d := apiKeyDTO(k)
	d.Key = key
	return c.JSON(http.StatusCreated, d)
}

func (s *Server) apiKeyList(c echo.Context) error {
	return respondList(c, s.ctl.ListAPIKeys, apiKeyDTO)
}

func (s *Server) apiKeyRevoke(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "API key")
	if err != nil {
		return err
	}
	k, err := s.ctl.RevokeAPIKey(c.Request().Context(), actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiKeyDTO(k))
}

package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// apiKeyDTO shows a stored key: never the key itself, only its prefix, scopes, last
// use (updated at most once per cache period, 5 s) and revocation time.
func apiKeyDTO(k *models.APIKey) APIKeyDTO {
	d := APIKeyDTO{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Topics: k.Topics, CreatedAt: k.CreatedAt.UTC().Format(timeFormat)}
	if d.Topics == nil {
		d.Topics = []string{}
	}
	if k.LastUsedAt != nil {
		s := k.LastUsedAt.UTC().Format(timeFormat)
		d.LastUsedAt = &s
	}
	if k.RevokedAt != nil {
		s := k.RevokedAt.UTC().Format(timeFormat)
		d.RevokedAt = &s
	}
	return d
}

func (s *Server) apiKeyList(c echo.Context) error {
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	ks, err := s.st.APIKeyList(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	out := listResponse[APIKeyDTO]{Items: []APIKeyDTO{}}
	for _, k := range ks {
		out.Items = append(out.Items, apiKeyDTO(k))
	}
	if len(ks) > 0 {
		out.NextCursor = nextCursor(ks[len(ks)-1].ID, len(ks), limit)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiKeyRevokeHandler(c echo.Context) error {
	k, err := s.revokeAPIKey(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apiKeyDTO(k))
}

// revokeAPIKey revokes a key by id: at once on this instance, within the 5 s key
// cache on every other one (DESIGN §8). Audited. Shared by the API and the console.
func (s *Server) revokeAPIKey(c echo.Context, rawID string) (*models.APIKey, error) {
	id, err := strconv.ParseInt(rawID, 10, 64)
	if err != nil || id <= 0 {
		return nil, problem("not-found", "no API key "+rawID)
	}
	k, err := s.st.APIKeyRevoke(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	s.keys.Delete(k.Prefix)
	s.audit(c, "apikey.revoke", k.Prefix, map[string]any{"name": k.Name}, map[string]any{"revoked_at": k.RevokedAt})
	return k, nil
}

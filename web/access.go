package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

type apiKeysPage struct {
	Items  []APIKeyDTO
	Next   string
	NewKey string
	Form   map[string]string
	Errors map[string]string
}

func (s *Server) consoleAPIKeys(c echo.Context) error {
	return s.renderAPIKeys(c, http.StatusOK, apiKeysPage{}, "", "")
}

func (s *Server) renderAPIKeys(c echo.Context, status int, page apiKeysPage, notice, errLine string) error {
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	ks, err := s.st.APIKeyList(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	for _, k := range ks {
		page.Items = append(page.Items, apiKeyDTO(k))
	}
	if len(ks) > 0 {
		page.Next = nextCursor(ks[len(ks)-1].ID, len(ks), limit)
	}
	if page.Form == nil {
		page.Form = map[string]string{}
	}
	if page.Errors == nil {
		page.Errors = map[string]string{}
	}
	return s.render(c, status, "apikeys", "api-keys", "API keys", page, notice, errLine)
}

func (s *Server) consoleAPIKeyCreate(c echo.Context) error {
	form := map[string]string{"name": c.FormValue("name"), "topics": c.FormValue("topics")}
	var topics []string
	for _, t := range strings.Split(form["topics"], ",") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	var v models.ValidationError
	if form["name"] == "" || len(form["name"]) > 120 || !models.ValidLabel(form["name"]) {
		v.Add("/name", "names are 1 to 120 bytes without control characters")
	}
	if len(topics) == 0 {
		v.Add("/topics", "list at least one topic name or pattern such as orders.*")
	}
	for _, p := range topics {
		if !models.ValidTopicPattern(p) {
			v.Add("/topics", "a topic name where * stands for any run of characters")
		}
	}
	if len(v.Errors) > 0 {
		fields, _, _ := formErrors(&v)
		return s.renderAPIKeys(c, http.StatusUnprocessableEntity, apiKeysPage{Form: form, Errors: fields}, "", "")
	}
	key, prefix, hash := NewAPIKey()
	k := &models.APIKey{Name: form["name"], Prefix: prefix, Hash: hash, Topics: topics}
	if err := s.st.APIKeyCreate(c.Request().Context(), k); err != nil {
		return err
	}
	s.audit(c, "apikey.create", prefix, nil, map[string]any{"name": k.Name, "topics": k.Topics})
	return s.renderAPIKeys(c, http.StatusCreated, apiKeysPage{NewKey: key}, "", "")
}

func (s *Server) consoleAPIKeyRevoke(c echo.Context) error {
	k, err := s.revokeAPIKey(c, c.Param("id"))
	if err != nil {
		return err
	}
	return redirectWith(c, consolePath+"/api-keys", "Key "+k.Prefix+" revoked; every api instance refuses it within 5 s.")
}

type usersPage struct {
	Items  []UserDTO
	Next   string
	Roles  []models.Role
	Form   map[string]string
	Errors map[string]string
}

func (s *Server) consoleUsers(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, usersPage{}, "")
}

func (s *Server) renderUsers(c echo.Context, status int, page usersPage, errLine string) error {
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	us, err := s.st.UserList(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	for _, u := range us {
		page.Items = append(page.Items, userDTO(u))
	}
	if len(us) > 0 {
		page.Next = nextCursor(us[len(us)-1].ID, len(us), limit)
	}
	page.Roles = models.Roles()
	if page.Form == nil {
		page.Form = map[string]string{}
	}
	if page.Errors == nil {
		page.Errors = map[string]string{}
	}
	return s.render(c, status, "users", "users", "Users", page, "", errLine)
}

// userActionError re-renders the users page for a user's mistake, or fails.
func (s *Server) userActionError(c echo.Context, err error, form map[string]string) error {
	fields, line, ok := formErrors(err)
	if !ok {
		return err
	}
	return s.renderUsers(c, fromError(err).Status, usersPage{Form: form, Errors: fields}, line)
}

func (s *Server) consoleUserCreate(c echo.Context) error {
	req := userCreateRequest{Username: c.FormValue("username"), Password: c.FormValue("password"), Role: c.FormValue("role")}
	u, err := s.createUser(c, req)
	if err != nil {
		return s.userActionError(c, err, map[string]string{"username": req.Username})
	}
	return redirectWith(c, consolePath+"/users", "User "+u.Username+" created.")
}

func (s *Server) consoleUserRole(c echo.Context) error {
	role := c.FormValue("role")
	u, err := s.updateUser(c, c.Param("id"), userUpdateRequest{Role: &role})
	if err != nil {
		return s.userActionError(c, err, nil)
	}
	return redirectWith(c, consolePath+"/users", "User "+u.Username+" is now "+string(u.Role)+"; their sessions were signed out.")
}

func (s *Server) consoleUserRevoke(c echo.Context) error {
	if err := s.revokeTokens(c, c.Param("id")); err != nil {
		return s.userActionError(c, err, nil)
	}
	return redirectWith(c, consolePath+"/users", "Signed out everywhere.")
}

func (s *Server) consoleUserDelete(c echo.Context) error {
	if err := s.deleteUser(c, c.Param("id")); err != nil {
		return s.userActionError(c, err, nil)
	}
	return redirectWith(c, consolePath+"/users", "User deleted.")
}

type auditPageData struct {
	Items         []AuditEntryDTO
	Actor, Action string
	NextURL       string
}

func (s *Server) consoleAudit(c echo.Context) error {
	f, before, limit, err := auditPage(c)
	if err != nil {
		return err
	}
	es, err := s.st.AuditList(c.Request().Context(), f, before, limit)
	if err != nil {
		return err
	}
	page := auditPageData{Actor: f.Actor, Action: f.Action}
	for _, e := range es {
		page.Items = append(page.Items, auditDTO(e))
	}
	if len(es) > 0 {
		if next := nextCursor(es[len(es)-1].ID, len(es), limit); next != "" {
			v := c.QueryParams()
			v.Set("cursor", next)
			page.NextURL = consolePath + "/audit?" + v.Encode()
		}
	}
	return s.render(c, http.StatusOK, "audit", "audit", "Audit log", page, "", "")
}

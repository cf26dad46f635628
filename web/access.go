package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// listPage reads ?limit= and ?cursor= as every console list does.
func listPage(c echo.Context) (control.PageRequest, error) {
	return control.ParsePage(c.QueryParam("limit"), c.QueryParam("cursor"))
}

// fetchPage reads the page of a list that the request's ?limit= and ?cursor= ask for.
func fetchPage[T any](c echo.Context, fetch func(context.Context, control.PageRequest) (control.Page[T], error)) (control.Page[T], error) {
	p, err := listPage(c)
	if err != nil {
		return control.Page[T]{}, err
	}
	return fetch(c.Request().Context(), p)
}

// nextURL is the link to a list's next page: this page's query with cursor set
// ("" on the last page).
func nextURL(c echo.Context, path, cursor string) string {
	if cursor == "" {
		return ""
	}
	v := c.QueryParams()
	v.Set("cursor", cursor)
	return path + "?" + v.Encode()
}

// actorOf is who the audit log names for a console request.
func actorOf(c echo.Context) control.Actor {
	return control.ActorOf(consoleUser(c), c.RealIP(), "console")
}

// listForm is a list page with a create form: one page of Items (Next is the
// cursor of the following page), the form's values and its field errors by JSON
// pointer.
type listForm[T any] struct {
	Items  []T
	Next   string
	Form   map[string]string
	Errors map[string]string
}

// newListForm fills a listForm; nil form values and errors become empty maps.
func newListForm[T any](items []T, next string, form, errs map[string]string) listForm[T] {
	if form == nil {
		form = map[string]string{}
	}
	if errs == nil {
		errs = map[string]string{}
	}
	return listForm[T]{Items: items, Next: next, Form: form, Errors: errs}
}

type apiKeysPage struct {
	Items  []apiKeyView
	Next   string
	NewKey string
	Form   map[string]string
	Errors map[string]string
}

func (s *Console) consoleAPIKeys(c echo.Context) error {
	return s.renderAPIKeys(c, http.StatusOK, apiKeysPage{}, "", "")
}

func (s *Console) renderAPIKeys(c echo.Context, status int, page apiKeysPage, notice, errLine string) error {
	ks, err := fetchPage(c, s.ctl.ListAPIKeys)
	if err != nil {
		return err
	}
	page.Items, page.Next = control.Map(ks, apiKeyViewOf).Items, ks.NextCursor
	if page.Form == nil {
		page.Form = map[string]string{}
	}
	if page.Errors == nil {
		page.Errors = map[string]string{}
	}
	return s.render(c, status, "apikeys", "api-keys", "API keys", page, notice, errLine)
}

func (s *Console) consoleAPIKeyCreate(c echo.Context) error {
	form := map[string]string{"name": c.FormValue("name"), "topics": c.FormValue("topics")}
	var topics []string
	for _, t := range strings.Split(form["topics"], ",") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	key, _, err := s.ctl.CreateAPIKey(c.Request().Context(), actorOf(c), control.APIKeySpec{Name: form["name"], Topics: topics})
	if err != nil {
		return rerender(err, func(fields map[string]string, line string) error {
			if len(fields) > 0 {
				line = ""
			}
			return s.renderAPIKeys(c, http.StatusUnprocessableEntity, apiKeysPage{Form: form, Errors: fields}, "", line)
		})
	}
	return s.renderAPIKeys(c, http.StatusCreated, apiKeysPage{NewKey: key}, "", "")
}

func (s *Console) consoleAPIKeyRevoke(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "API key")
	if err != nil {
		return err
	}
	k, err := s.ctl.RevokeAPIKey(c.Request().Context(), actorOf(c), id)
	if err != nil {
		return err
	}
	return redirectWith(c, consolePath+"/api-keys", "Key "+k.Prefix+" revoked; every api instance refuses it within 5 s.")
}

type usersPage struct {
	Items  []userView
	Next   string
	Roles  []models.Role
	Form   map[string]string
	Errors map[string]string
}

func (s *Console) consoleUsers(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, usersPage{}, "")
}

func (s *Console) renderUsers(c echo.Context, status int, page usersPage, errLine string) error {
	us, err := fetchPage(c, s.ctl.ListUsers)
	if err != nil {
		return err
	}
	page.Items, page.Next = control.Map(us, userViewOf).Items, us.NextCursor
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
func (s *Console) userActionError(c echo.Context, err error, form map[string]string) error {
	return rerender(err, func(fields map[string]string, line string) error {
		status, _, _ := describe(err)
		return s.renderUsers(c, status, usersPage{Form: form, Errors: fields}, line)
	})
}

// userParam reads the user id of the path (a non-number is not found).
func userParam(c echo.Context) (int64, error) { return control.ParseID(c.Param("id"), "user") }

func (s *Console) consoleUserCreate(c echo.Context) error {
	spec := control.UserSpec{Username: c.FormValue("username"), Password: c.FormValue("password"), Role: models.Role(c.FormValue("role"))}
	u, err := s.ctl.CreateUser(c.Request().Context(), actorOf(c), spec)
	if err != nil {
		return s.userActionError(c, err, map[string]string{"username": spec.Username})
	}
	return redirectWith(c, consolePath+"/users", "User "+u.Username+" created.")
}

func (s *Console) consoleUserRole(c echo.Context) error {
	role := models.Role(c.FormValue("role"))
	id, err := userParam(c)
	if err != nil {
		return s.userActionError(c, err, nil)
	}
	u, err := s.ctl.PatchUser(c.Request().Context(), actorOf(c), id, control.UserPatch{Role: &role})
	if err != nil {
		return s.userActionError(c, err, nil)
	}
	return redirectWith(c, consolePath+"/users", "User "+u.Username+" is now "+string(u.Role)+"; their sessions were signed out.")
}

func (s *Console) consoleUserRevoke(c echo.Context) error {
	id, err := userParam(c)
	if err == nil {
		err = s.ctl.RevokeTokens(c.Request().Context(), actorOf(c), id)
	}
	if err != nil {
		return s.userActionError(c, err, nil)
	}
	return redirectWith(c, consolePath+"/users", "Signed out everywhere.")
}

func (s *Console) consoleUserDelete(c echo.Context) error {
	id, err := userParam(c)
	if err == nil {
		err = s.ctl.DeleteUser(c.Request().Context(), actorOf(c), id)
	}
	if err != nil {
		return s.userActionError(c, err, nil)
	}
	return redirectWith(c, consolePath+"/users", "User deleted.")
}

type auditPageData struct {
	Items         []auditView
	Actor, Action string
	NextURL       string
}

func (s *Console) consoleAudit(c echo.Context) error {
	q, err := control.ParseAuditQuery(c.QueryParam("actor"), c.QueryParam("action"), c.QueryParam("limit"), c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	es, err := s.ctl.ListAudit(c.Request().Context(), q)
	if err != nil {
		return err
	}
	page := auditPageData{Actor: q.Filter.Actor, Action: q.Filter.Action, Items: control.Map(es, auditViewOf).Items,
		NextURL: nextURL(c, consolePath+"/audit", es.NextCursor)}
	return s.render(c, http.StatusOK, "audit", "audit", "Audit log", page, "", "")
}

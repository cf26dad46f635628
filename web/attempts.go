package web

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// attemptFilterFields are the group page's attempt search parameters, the API's
// (GET /api/v1/groups/{group}/attempts).
var attemptFilterFields = []string{"status", "status_class", "error_class", "since", "until", "limit", "cursor"}

// groupAttempts fills the group page's attempt list from the request's search
// parameters through the control query the API uses; invalid ones are shown next to
// their fields and list nothing.
func (s *Console) groupAttempts(c echo.Context, g *models.Group, page *groupPage) error {
	page.AttemptFilter, page.AttemptErrors = map[string]string{}, map[string]string{}
	for _, f := range attemptFilterFields {
		page.AttemptFilter[f] = c.QueryParam(f)
	}
	page.StatusClasses = []string{"2xx", "3xx", "4xx", "5xx"}
	for _, ec := range delivery.ErrorClasses() {
		page.ErrorClasses = append(page.ErrorClasses, string(ec))
	}
	limit := c.QueryParam("limit")
	if limit == "" {
		limit = "20"
	}
	q, err := control.ParseAttemptQuery(control.AttemptQuery{Status: c.QueryParam("status"), StatusClass: c.QueryParam("status_class"),
		ErrorClass: c.QueryParam("error_class"), Since: c.QueryParam("since"), Until: c.QueryParam("until"), Limit: limit,
		Cursor: c.QueryParam("cursor")})
	if err != nil {
		fields, _, ok := formErrors(err)
		if !ok {
			return err
		}
		page.AttemptErrors = fields
		return nil
	}
	list, err := s.ctl.SearchAttempts(c.Request().Context(), g.Name, q)
	if err != nil {
		return err
	}
	as := make([]models.DeliveryAttempt, len(list.Items))
	for i, r := range list.Items {
		as[i] = r.DeliveryAttempt
	}
	page.Attempts = attemptViews(as, map[int64]string{g.ID: g.Name})
	if list.NextCursor != "" {
		v := url.Values{}
		for _, f := range attemptFilterFields {
			if x := c.QueryParam(f); x != "" {
				v.Set(f, x)
			}
		}
		v.Set("cursor", list.NextCursor)
		page.AttemptsNext = consolePath + "/groups/" + url.PathEscape(g.Name) + "?" + v.Encode() + "#attempts"
	}
	return nil
}

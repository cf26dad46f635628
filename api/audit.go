package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models/store"
)

// AuditEntryDTO is one audit-log entry: who (actor, source_ip) did what (action on
// subject) when, with the state before and after as JSON (null when none).
type AuditEntryDTO struct {
	ID        int64           `json:"id"`
	Actor     string          `json:"actor"`
	Action    string          `json:"action"`
	Subject   string          `json:"subject"`
	SourceIP  string          `json:"source_ip"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
	CreatedAt string          `json:"created_at"`
}

func auditDTO(e store.AuditEntry) AuditEntryDTO {
	d := AuditEntryDTO{ID: e.ID, Actor: e.Actor, Action: e.Action, Subject: e.Subject, SourceIP: e.SourceIP,
		Before: rawOrNull(e.Before), After: rawOrNull(e.After), CreatedAt: e.CreatedAt.UTC().Format(timeFormat)}
	return d
}

func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return b
}

// auditPage reads ?actor=, ?action= (a trailing "." matches a prefix), ?limit= and
// ?cursor= (newest first).
func auditPage(c echo.Context) (store.AuditFilter, int64, int, error) {
	f := store.AuditFilter{Actor: c.QueryParam("actor"), Action: c.QueryParam("action")}
	_, limit, err := listPage(c)
	if err != nil {
		return f, 0, 0, err
	}
	var before int64
	if s := c.QueryParam("cursor"); s != "" {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err == nil {
			before, err = strconv.ParseInt(string(b), 10, 64)
		}
		if err != nil {
			return f, 0, 0, problem("validation", "cursor is not one this API returned")
		}
	}
	return f, before, limit, nil
}

func (s *Server) auditList(c echo.Context) error {
	f, before, limit, err := auditPage(c)
	if err != nil {
		return err
	}
	es, err := s.st.AuditList(c.Request().Context(), f, before, limit)
	if err != nil {
		return err
	}
	out := listResponse[AuditEntryDTO]{Items: []AuditEntryDTO{}}
	for _, e := range es {
		out.Items = append(out.Items, auditDTO(e))
	}
	if len(es) > 0 {
		out.NextCursor = nextCursor(es[len(es)-1].ID, len(es), limit)
	}
	return c.JSON(http.StatusOK, out)
}

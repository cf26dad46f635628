package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
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

func auditDTO(e control.AuditEntry) AuditEntryDTO {
	return AuditEntryDTO{ID: e.ID, Actor: e.Actor, Action: e.Action, Subject: e.Subject, SourceIP: e.SourceIP,
		Before: rawOrNull(e.Before), After: rawOrNull(e.After), CreatedAt: e.CreatedAt.UTC().Format(control.TimeFormat)}
}

func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return b
}

// auditList reads ?actor=, ?action= (a trailing "." matches a prefix), ?limit= and
// ?cursor=, newest first.
func (s *Server) auditList(c echo.Context) error {
	q, err := control.ParseAuditQuery(c.QueryParam("actor"), c.QueryParam("action"), c.QueryParam("limit"), c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	page, err := s.ctl.ListAudit(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listOf(page, auditDTO))
}

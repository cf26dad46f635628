package client

import (
	"context"
	"encoding/json"
)

// AuditEntry is one audit-log entry: who (Actor, SourceIP) did what (Action on
// Subject) when (CreatedAt, RFC 3339), with the state Before and After as JSON
// (null when none).
type AuditEntry struct {
	ID        int64           `json:"id"`
	Actor     string          `json:"actor"`
	Action    string          `json:"action"`
	Subject   string          `json:"subject"`
	SourceIP  string          `json:"source_ip"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
	CreatedAt string          `json:"created_at"`
}

// AuditQuery filters the audit log: one Actor (a username) and an Action (e.g.
// group.update; a trailing "." matches every action with that prefix, e.g.
// "group."). Empty fields do not filter.
type AuditQuery struct {
	Actor, Action string
}

// ListAudit returns one page of the audit log, newest first (GET
// /api/v1/audit-log). Needs role admin. Errors: ErrForbidden, ErrInvalid.
func (c *Client) ListAudit(ctx context.Context, q AuditQuery, o ListOptions) (*Page[AuditEntry], error) {
	v := o.query()
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if q.Action != "" {
		v.Set("action", q.Action)
	}
	var p Page[AuditEntry]
	return &p, c.do(ctx, request{method: "GET", path: "/api/v1/audit-log", query: v}, &p)
}

package control

import (
	"context"
	"github.com/heraldhq/herald/models/store"
)

// AuditQuery reads the audit log newest first: Filter narrows by actor and action (a
// trailing "." matches a prefix); Before continues an earlier page (0: the newest).
type AuditQuery struct {
	Filter store.AuditFilter
	Before int64
	Limit  int
}

// ParseAuditQuery reads actor, action, limit and cursor as transports receive them
// (the cursor holds the last id seen, as any list's). Errors are a
// *models.ValidationError on /limit or /cursor.
func ParseAuditQuery(actor, action, limit, cursor string) (AuditQuery, error) {
	p, err := ParsePage(limit, cursor)
	return AuditQuery{Filter: store.AuditFilter{Actor: actor, Action: action}, Before: p.After, Limit: p.Limit}, err
}

// ListAudit returns one page of audit entries, newest first.
func (c *Control) ListAudit(ctx context.Context, q AuditQuery) (Page[store.AuditEntry], error) {
	es, err := c.st.AuditList(ctx, q.Filter, q.Before, q.Limit)
	if err != nil {
		return Page[store.AuditEntry]{}, err
	}
	return pageOf(es, q.Limit, func(e store.AuditEntry) int64 { return e.ID }), nil
}

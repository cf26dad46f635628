package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEntry is one row of the append-only audit log: who (Actor, SourceIP) did what
// (Action on Subject) when, with the JSON state Before and After (nil when none).
type AuditEntry struct {
	ID        int64
	Actor     string
	Action    string
	Subject   string
	SourceIP  string
	Before    []byte
	After     []byte
	CreatedAt time.Time
}

// AuditFilter narrows AuditList: Actor and Action match exactly, Action also as a
// prefix when it ends with "." (e.g. "group."); empty means any.
type AuditFilter struct {
	Actor, Action string
}

// AuditList returns up to limit entries newest first; before > 0 continues a page
// with entries whose id is below it.
func (s *Store) AuditList(ctx context.Context, f AuditFilter, before int64, limit int) ([]AuditEntry, error) {
	q := s.db.WithContext(ctx).Table("audit_log").Order("id DESC").Limit(limit)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if f.Action != "" {
		if f.Action[len(f.Action)-1] == '.' {
			q = q.Where("action LIKE ?", escapeLike(f.Action)+"%")
		} else {
			q = q.Where("action = ?", f.Action)
		}
	}
	var rows []struct {
		ID         int64
		Actor      string
		Action     string
		Subject    string
		SourceIP   string
		BeforeJSON []byte
		AfterJSON  []byte
		CreatedAt  time.Time
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list audit log: %w", err)
	}
	out := make([]AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = AuditEntry{ID: r.ID, Actor: r.Actor, Action: r.Action, Subject: r.Subject, SourceIP: r.SourceIP, Before: r.BeforeJSON, After: r.AfterJSON, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

func escapeLike(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '_' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// AuditRecord appends one entry to the append-only audit log.
func (s *Store) AuditRecord(ctx context.Context, actor, action, subject, sourceIP string, before, after any) error {
	var b, a []byte
	if before != nil {
		b, _ = json.Marshal(before)
	}
	if after != nil {
		a, _ = json.Marshal(after)
	}
	_, err := s.sql.ExecContext(ctx, "INSERT INTO audit_log (actor, action, subject, source_ip, before_json, after_json, created_at) VALUES (?,?,?,?,?,?,NOW(3))",
		actor, action, subject, sourceIP, b, a)
	return err
}

package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/control"
)

// auditView is one audit entry as the audit page shows it: Summary says in a
// sentence what changed, Changed lists the fields whose value differs between
// Before and After (or that only one of them holds), Kept the fields both hold
// with the same value. Together they show every value the entry records.
type auditView struct {
	Actor, Action, Subject, SourceIP string
	Summary                          string
	Changed, Kept                    []auditField
	CreatedAt                        string
}

// auditField is one field of an audit entry's before and after documents, named by
// its path (nested objects joined with ".", list items by index). HasBefore and
// HasAfter say which document holds it.
type auditField struct {
	Name                string
	Before, After       string
	HasBefore, HasAfter bool
}

// auditSummaryFields is how many changed fields the summary names; the list shows
// them all.
const auditSummaryFields = 3

func auditViewOf(e control.AuditEntry) auditView {
	v := auditView{Actor: e.Actor, Action: e.Action, Subject: e.Subject, SourceIP: e.SourceIP, CreatedAt: fmtTime(e.CreatedAt)}
	before, after := auditFields(e.Before), auditFields(e.After)
	all := maps.Clone(before)
	maps.Copy(all, after)
	names := slices.Sorted(maps.Keys(all))
	for _, n := range names {
		b, hasB := before[n]
		a, hasA := after[n]
		f := auditField{Name: n, Before: b, After: a, HasBefore: hasB, HasAfter: hasA}
		if hasB && hasA && a == b {
			v.Kept = append(v.Kept, f)
		} else {
			v.Changed = append(v.Changed, f)
		}
	}
	v.Summary = auditSummary(v.Changed, len(before) > 0, len(after) > 0)
	return v
}

// auditSummary is a sentence for an entry's changed fields: the first
// auditSummaryFields as "x from A to B", then how many more.
func auditSummary(changed []auditField, hasBefore, hasAfter bool) string {
	switch {
	case !hasBefore && !hasAfter:
		return "No values recorded."
	case len(changed) == 0:
		return "Nothing changed."
	case !hasBefore:
		return "Recorded " + values(len(changed)) + "."
	case !hasAfter:
		return "Removed " + values(len(changed)) + "."
	}
	parts := make([]string, 0, auditSummaryFields+1)
	for _, f := range changed[:min(len(changed), auditSummaryFields)] {
		switch {
		case !f.HasBefore:
			parts = append(parts, "set "+f.Name+" to "+f.After)
		case !f.HasAfter:
			parts = append(parts, "removed "+f.Name+" ("+f.Before+")")
		default:
			parts = append(parts, "changed "+f.Name+" from "+f.Before+" to "+f.After)
		}
	}
	if n := len(changed) - auditSummaryFields; n > 0 {
		parts = append(parts, fmt.Sprintf("%d more", n))
	}
	s := strings.Join(parts, ", ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// auditFields flattens an audit document (JSON) into its fields by path: scalars as
// text (strings as they are, "" shown as “(empty)”), an empty object or list as {}
// or []. A document that is not JSON is one field, "value", holding its text; an
// absent or null document has no fields.
func auditFields(doc []byte) map[string]string {
	out := map[string]string{}
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || string(doc) == "null" {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out["value"] = string(doc)
		return out
	}
	flattenAudit(out, "", v)
	return out
}

func flattenAudit(out map[string]string, path string, v any) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	name := path
	if name == "" {
		name = "value"
	}
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			out[name] = "{}"
		}
		for k, x := range t {
			flattenAudit(out, join(k), x)
		}
	case []any:
		if len(t) == 0 {
			out[name] = "[]"
		}
		for i, x := range t {
			flattenAudit(out, join(strconv.Itoa(i)), x)
		}
	case string:
		if t == "" {
			t = "(empty)"
		}
		out[name] = t
	case nil:
		out[name] = "null"
	default:
		out[name] = fmt.Sprint(t)
	}
}

// values is "1 value" or "n values".
func values(n int) string {
	if n == 1 {
		return "1 value"
	}
	return strconv.Itoa(n) + " values"
}

package web

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAuditFields flattens audit documents into fields by path.
func TestAuditFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		doc  string
		want map[string]string
	}{
		{"absent", ``, map[string]string{}},
		{"null", `null`, map[string]string{}},
		{"flat", `{"a":1,"b":"x","c":true,"d":null,"e":""}`, map[string]string{"a": "1", "b": "x", "c": "true", "d": "null", "e": "(empty)"}},
		{"nested", `{"s":[{"topic":"t","tags":["a","b"]}],"m":{"k":2.5}}`,
			map[string]string{"s.0.topic": "t", "s.0.tags.0": "a", "s.0.tags.1": "b", "m.k": "2.5"}},
		{"empty containers", `{"tags":[],"headers":{}}`, map[string]string{"tags": "[]", "headers": "{}"}},
		{"big number kept exact", `{"id":12345678901234567890}`, map[string]string{"id": "12345678901234567890"}},
		{"scalar document", `"resumed"`, map[string]string{"value": "resumed"}},
		{"not JSON", `oops`, map[string]string{"value": "oops"}},
	} {
		require.Equal(t, tc.want, auditFields([]byte(tc.doc)), tc.name)
	}
}

// TestAuditSummary: a sentence names the first changed fields, then counts the rest.
func TestAuditSummary(t *testing.T) {
	t.Parallel()
	f := func(name, before, after string) auditField {
		return auditField{Name: name, Before: before, After: after, HasBefore: before != "", HasAfter: after != ""}
	}
	require.Equal(t, "No values recorded.", auditSummary(nil, false, false))
	require.Equal(t, "Nothing changed.", auditSummary(nil, true, true))
	require.Equal(t, "Recorded 2 values.", auditSummary([]auditField{f("a", "", "1"), f("b", "", "2")}, false, true))
	require.Equal(t, "Removed 1 value.", auditSummary([]auditField{f("a", "1", "")}, true, false))
	require.Equal(t, "Changed a from 1 to 2, set b to x, removed c (y), 1 more.",
		auditSummary([]auditField{f("a", "1", "2"), f("b", "", "x"), f("c", "y", ""), f("d", "3", "4")}, true, true))
}

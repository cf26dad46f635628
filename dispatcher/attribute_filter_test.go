package dispatcher

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/models"
)

// TestPassesAttributeFilter: a row passes when its tag and its headers pass; the
// headers come from a read of the column or the carried message, and without
// either the answer is not known (the cursor then reads the queue).
func TestPassesAttributeFilter(t *testing.T) {
	t.Parallel()
	f, err := models.ParseFilter(`attributes.x-region = "eu"`)
	require.NoError(t, err)
	sub := models.Subscription{Tags: []string{"created"}, Filter: f.String(), Compiled: f}
	eu := map[string]string{"x-region": "eu"}
	cases := []struct {
		name         string
		row          notify.Row
		headers      map[int64]map[string]string
		match, known bool
	}{
		{"read eu", notify.Row{ID: 1, Tag: "created"}, map[int64]map[string]string{1: eu}, true, true},
		{"read none", notify.Row{ID: 1, Tag: "created"}, map[int64]map[string]string{1: nil}, false, true},
		{"carried eu", notify.Row{ID: 1, Tag: "created", Msg: &models.Message{Headers: eu}}, nil, true, true},
		{"carried none", notify.Row{ID: 1, Tag: "created", Msg: &models.Message{}}, nil, false, true},
		{"tag filtered", notify.Row{ID: 1, Tag: "deleted"}, map[int64]map[string]string{1: eu}, false, true},
		{"unknown", notify.Row{ID: 1, Tag: "created"}, nil, true, false},
	}
	for _, c := range cases {
		match, known := passes(sub, c.row, c.headers)
		require.Equal(t, c.match, match, c.name)
		require.Equal(t, c.known, known, c.name)
	}
	match, known := passes(models.Subscription{}, notify.Row{ID: 1}, nil)
	require.True(t, match && known, "no filter: every row, headers never needed")
}

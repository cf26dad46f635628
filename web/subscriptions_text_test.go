package web

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// TestSubscriptionTextRoundTrip: the settings form's subscription text carries
// tags and attribute filters, so saving a form unchanged keeps both.
func TestSubscriptionTextRoundTrip(t *testing.T) {
	t.Parallel()
	in := []control.SubscriptionSetting{
		{Topic: "orders", Tags: []string{"created", "paid - late"}, Filter: `attributes.x-region = "eu" AND NOT attributes:x-test`},
		{Topic: "refunds", Tags: []string{}},
		{Topic: "audit", Tags: []string{"- odd"}, Filter: `hasPrefix(attributes.x-env, "prod")`},
	}
	got := parseSubscriptions(formatSubscriptions(in))
	want := []models.Subscription{
		{Topic: "orders", Tags: []string{"created", "paid - late"}, Filter: in[0].Filter},
		{Topic: "refunds", Tags: []string{}},
		{Topic: "audit", Tags: []string{"- odd"}, Filter: in[2].Filter},
	}
	require.Equal(t, want, got)
	// A filter line before any topic is kept as a (bad) topic name, so validation
	// refuses the form rather than dropping the filter silently.
	got = parseSubscriptions("filter: attributes:x-a\r\norders\r\n")
	require.Len(t, got, 2)
	require.Equal(t, "filter: attributes:x-a", got[0].Topic)
	require.False(t, models.ValidName(got[0].Topic))
}

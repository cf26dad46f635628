package web

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPagesParseAndEscape(t *testing.T) {
	t.Parallel()
	p, err := ParsePages()
	require.NoError(t, err)
	var buf bytes.Buffer
	err = p.Render(&buf, "error", map[string]any{"Title": "<b>t</b>", "Page": map[string]string{"Detail": `<script>alert(1)</script>`}})
	require.NoError(t, err)
	require.Contains(t, buf.String(), "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.NotContains(t, buf.String(), "<script>alert")
	require.Error(t, p.Render(&buf, "nope", nil))
	_, err = Static().Open("console.css")
	require.NoError(t, err)
}

func TestChart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	svg := string(Chart([]time.Time{now, now.Add(time.Minute)}, []Series{{Label: "<i>x</i>", Colour: `red"><script>`, Values: []float64{0, 7}}}, 600, 180))
	require.True(t, strings.HasPrefix(svg, `<svg class="chart"`))
	require.NotContains(t, svg, "<script>")
	require.NotContains(t, svg, "<i>x</i>")
	require.Contains(t, svg, ">10<", "the y axis tops at a round number")
	require.Contains(t, svg, "14:01")
	for _, tc := range []struct{ in, want float64 }{{0, 1}, {1, 1}, {3, 5}, {7, 10}, {11, 20}, {999, 1000}} {
		require.Equal(t, tc.want, niceCeil(tc.in), tc.in)
	}
	require.Equal(t, "1.2k", short(1200))
	require.Equal(t, "3", short(3))
}

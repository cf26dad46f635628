package web

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// Series is one line of a chart: a fixed label (from code, never user input), a
// colour class (blue, green, red or orange; see console.css) and one value per point.
type Series struct {
	Label  string
	Colour string
	Values []float64
}

// Chart draws series sharing the x axis Times as an inline SVG line chart, width ×
// height pixels, with the y axis from 0 to the largest value. It emits only numbers
// and the escaped labels, so its output is safe to embed.
func Chart(times []time.Time, series []Series, width, height int) template.HTML {
	const padL, padB, padT = 48, 18, 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img">`, width, height)
	maxV := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			maxV = math.Max(maxV, v)
		}
	}
	top := niceCeil(maxV)
	plotW, plotH := float64(width-padL-4), float64(height-padB-padT)
	for i := 0; i <= 4; i++ {
		y := float64(padT) + plotH*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/>`, padL, y, width-4, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="axis" text-anchor="end">%s</text>`, padL-4, y+4, template.HTMLEscapeString(short(top*float64(4-i)/4)))
	}
	if n := len(times); n > 1 {
		for _, i := range []int{0, n / 2, n - 1} {
			x := float64(padL) + plotW*float64(i)/float64(n-1)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis" text-anchor="middle">%s</text>`, x, height-4, times[i].UTC().Format("15:04"))
		}
	}
	for _, s := range series {
		if len(s.Values) == 0 {
			continue
		}
		var pts strings.Builder
		for i, v := range s.Values {
			x := float64(padL)
			if len(s.Values) > 1 {
				x += plotW * float64(i) / float64(len(s.Values)-1)
			}
			y := float64(padT) + plotH
			if top > 0 {
				y -= plotH * v / top
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
		}
		fmt.Fprintf(&b, `<polyline class="line %s" points="%s"><title>%s</title></polyline>`,
			template.HTMLEscapeString(s.Colour), strings.TrimSpace(pts.String()), template.HTMLEscapeString(s.Label))
	}
	b.WriteString(`</svg><div class="legend">`)
	for _, s := range series {
		fmt.Fprintf(&b, `<span><i class="%s"></i>%s</span>`, template.HTMLEscapeString(s.Colour), template.HTMLEscapeString(s.Label))
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String()) //nolint:gosec // built from numbers and escaped labels only
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short formats a count compactly: 950, 1.2k, 3.4M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

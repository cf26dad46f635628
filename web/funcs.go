package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// Funcs returns the helpers templates call: time and size formatting, Chart and the
// ordering control's options.
func Funcs() template.FuncMap {
	return template.FuncMap{
		"chart":          Chart,
		"hasPrefix":      strings.HasPrefix,
		"orderings":      func() []orderingChoice { return orderingChoices },
		"orderingChoice": orderingChoiceOf,
		"orderingForm": func(prefix string, form, errs map[string]string, mode orderingChoice) orderingFormView {
			return orderingFormView{Prefix: prefix, Form: form, Errors: errs, Mode: mode}
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"whenp": func(t *time.Time) string {
			if t == nil {
				return "never"
			}
			return t.UTC().Format("2006-01-02 15:04:05")
		},
		"ms": func(ms int64) string {
			if ms == 0 {
				return "—"
			}
			return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
		},
		"secs": func(s float64) string {
			switch {
			case s <= 0:
				return "0 s"
			case s < 120:
				return fmt.Sprintf("%.1f s", s)
			case s < 7200:
				return fmt.Sprintf("%.0f min", s/60)
			}
			return fmt.Sprintf("%.1f h", s/3600)
		},
		"count": func(n int64) string { return short(float64(n)) },
		"bytes": func(n int64) string {
			switch {
			case n >= 1<<20:
				return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
			case n >= 1<<10:
				return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
			}
			return fmt.Sprintf("%d B", n)
		},
	}
}

// Package web is Herald's console for operators: server-rendered html/template pages
// and static files embedded in the binary, with no CDN and no build step, their
// handlers, session and routes (Console.Routes, mounted beside the REST API under
// /console). Every change a form makes is a control action, so the console
// validates and audits exactly as the REST API and the CLI do; it never imports the
// api package.
package web

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"strings"
)

//go:embed index.html
var index []byte

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Index returns the landing page served at /.
func Index() []byte { return index }

// Static returns the console's static files (CSS, JS), rooted at static/.
func Static() fs.FS {
	sub, _ := fs.Sub(staticFS, "static")
	return sub
}

// Pages holds one parsed template per console page, each the shared layout plus the
// page's file. html/template escapes every value by context, so user strings (tags,
// keys, names, response excerpts) render as text, never markup.
type Pages struct {
	byName map[string]*template.Template
}

// ParsePages parses the embedded templates. It fails only if a template is broken,
// which tests catch.
func ParsePages() (*Pages, error) {
	base, err := template.New("layout.html").Funcs(Funcs()).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse console layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &Pages{byName: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return nil, fmt.Errorf("parse console page %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// Render writes page name with data through the layout. Unknown pages are an error.
func (p *Pages) Render(w io.Writer, name string, data any) error {
	t, ok := p.byName[name]
	if !ok {
		return fmt.Errorf("no console page %q", name)
	}
	return t.ExecuteTemplate(w, "layout.html", data)
}

// RenderLive writes only the "live" block of page name: the part of a page showing
// live state, which console.js fetches again every few seconds and swaps in place
// (liveHeader). ok is false when the page has no such block.
func (p *Pages) RenderLive(w io.Writer, name string, data any) (ok bool, err error) {
	t, found := p.byName[name]
	if !found {
		return false, fmt.Errorf("no console page %q", name)
	}
	if t.Lookup("live") == nil {
		return false, nil
	}
	return true, t.ExecuteTemplate(w, "live", data)
}

// Package web is Herald's console: server-rendered pages and static files embedded in
// the binary. This first slice serves a landing page; the console issue fills it in.
package web

import _ "embed"

//go:embed index.html
var index []byte

// Index returns the landing page.
func Index() []byte { return index }

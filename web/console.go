package web

import (
	"log/slog"

	"github.com/heraldhq/herald/control"
)

// Config wires a Console. Control is required: it performs every change and signs
// and checks session tokens. Log receives failed requests (nil: slog.Default).
// CookieSecure marks every console cookie Secure (HERALD_COOKIE_SECURE: behind a
// TLS-terminating proxy); without it cookies are Secure only on a direct TLS connection.
type Config struct {
	Control      *control.Control
	Log          *slog.Logger
	CookieSecure bool
}

// Console serves the web console's pages and forms under /console (Routes). Every
// read is a control query and every change a control action, so the console
// validates and audits exactly as the REST API does.
type Console struct {
	ctl          *control.Control
	log          *slog.Logger
	cookieSecure bool
}

// New returns a Console for cfg; it panics without cfg.Control.
func New(cfg Config) *Console {
	if cfg.Control == nil {
		panic("web: Config.Control is required")
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Console{ctl: cfg.Control, log: log, cookieSecure: cfg.CookieSecure}
}

package web

import (
	"log/slog"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
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

// Console serves the web console's pages and forms under /console (Routes). Reads
// go to the store; every change is a control action, so the console validates and
// audits exactly as the REST API does.
type Console struct {
	ctl          *control.Control
	st           *store.Store
	log          *slog.Logger
	cookieSecure bool
}

// New returns a Console for cfg.
func New(cfg Config) *Console {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Console{ctl: cfg.Control, st: cfg.Control.Store(), log: log, cookieSecure: cfg.CookieSecure}
}

var roleRank = map[models.Role]int{models.RoleViewer: 1, models.RoleOperator: 2, models.RoleAdmin: 3}

package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// access is what a route requires of its caller.
type access int

const (
	// public routes need no credentials (probes, the OpenAPI document, login).
	public access = iota
	// publisher routes need an API key (the /v1 data plane).
	publisher
	// viewer routes need a JWT of any role (reading the control plane).
	viewer
	// operator routes need a JWT of role operator or admin (changes).
	operator
	// admin routes need a JWT of role admin (users and the audit log).
	admin
)

// route is one REST endpoint: method, path in Echo's syntax (`:name` parameters),
// handler and what it requires (DESIGN §6).
type route struct {
	method  string
	path    string
	handler func(*Server, echo.Context) error
	access  access
}

// routeTable lists every REST route. The console mounts its own under /console.
var routeTable = []route{
	{http.MethodGet, "/healthz", (*Server).healthz, public},
	{http.MethodGet, "/readyz", (*Server).ready, public},
	{http.MethodGet, "/openapi.yaml", (*Server).openapi, public},
	{http.MethodGet, "/.well-known/jwks.json", (*Server).jwks, public},

	{http.MethodPost, "/v1/topics/:topic/messages", (*Server).publish, publisher},

	{http.MethodPost, "/api/v1/auth/login", (*Server).login, public},

	{http.MethodGet, "/api/v1/topics", (*Server).topicList, viewer},
	{http.MethodPost, "/api/v1/topics", (*Server).topicCreate, operator},
	{http.MethodGet, "/api/v1/topics/:topic", (*Server).topicGet, viewer},
	{http.MethodPatch, "/api/v1/topics/:topic", (*Server).topicUpdate, operator},
	{http.MethodDelete, "/api/v1/topics/:topic", (*Server).topicDelete, operator},
	{http.MethodGet, "/api/v1/topics/:topic/messages", (*Server).messageList, viewer},
	{http.MethodGet, "/api/v1/messages/:id", (*Server).messageGet, viewer},

	{http.MethodGet, "/api/v1/groups", (*Server).groupList, viewer},
	{http.MethodPost, "/api/v1/groups", (*Server).groupCreate, operator},
	{http.MethodGet, "/api/v1/groups/:group", (*Server).groupGet, viewer},
	{http.MethodPatch, "/api/v1/groups/:group", (*Server).groupUpdate, operator},
	{http.MethodPost, "/api/v1/groups/:group/pause", (*Server).groupPause, operator},
	{http.MethodPost, "/api/v1/groups/:group/resume", (*Server).groupResume, operator},
	{http.MethodGet, "/api/v1/groups/:group/stats", (*Server).groupStats, viewer},
	{http.MethodGet, "/api/v1/groups/:group/offsets", (*Server).groupOffsets, viewer},
	{http.MethodPost, "/api/v1/groups/:group/offsets/reset", (*Server).groupOffsetsReset, operator},
	{http.MethodPost, "/api/v1/groups/:group/secret/rotate", (*Server).groupSecretRotate, operator},
	{http.MethodPost, "/api/v1/groups/:group/test", (*Server).groupTestSend, operator},
	{http.MethodPost, "/api/v1/groups/:group/messages/:id/resend", (*Server).groupMessageResend, operator},
	{http.MethodPost, "/api/v1/groups/:group/resend", (*Server).groupResend, operator},

	{http.MethodGet, "/api/v1/groups/:group/dead-letters", (*Server).deadLetterList, viewer},
	{http.MethodGet, "/api/v1/groups/:group/dead-letters/:id", (*Server).deadLetterGet, viewer},
	{http.MethodPost, "/api/v1/groups/:group/dead-letters/redrive", (*Server).deadLetterRedrive, operator},
	{http.MethodPost, "/api/v1/groups/:group/dead-letters/purge", (*Server).deadLetterPurge, operator},

	{http.MethodPost, "/api/v1/push-keys/rotate", (*Server).pushKeyRotate, admin},

	{http.MethodGet, "/api/v1/api-keys", (*Server).apiKeyList, viewer},
	{http.MethodPost, "/api/v1/api-keys", (*Server).apiKeyCreate, operator},
	{http.MethodPost, "/api/v1/api-keys/:id/revoke", (*Server).apiKeyRevoke, operator},

	{http.MethodGet, "/api/v1/users", (*Server).userList, admin},
	{http.MethodPost, "/api/v1/users", (*Server).userCreate, admin},
	{http.MethodPatch, "/api/v1/users/:id", (*Server).userUpdate, admin},
	{http.MethodDelete, "/api/v1/users/:id", (*Server).userDelete, admin},
	{http.MethodPost, "/api/v1/users/:id/revoke-tokens", (*Server).userRevokeTokens, admin},

	{http.MethodGet, "/api/v1/audit-log", (*Server).auditList, admin},
}

// register adds routeTable to e. Routes under /v1 and /api/v1 hang off groups
// whose middleware authenticates first, so an unknown path below them answers 401
// to a caller without credentials, as any route there would.
func (s *Server) register(e *echo.Echo) {
	data := e.Group("/v1", s.requireAPIKey)
	control := e.Group("/api/v1", s.requireJWT)
	for _, r := range routeTable {
		h := func(c echo.Context) error { return r.handler(s, c) }
		switch r.access {
		case public:
			e.Add(r.method, r.path, h)
		case publisher:
			data.Add(r.method, strings.TrimPrefix(r.path, "/v1"), h)
		case viewer:
			control.Add(r.method, strings.TrimPrefix(r.path, "/api/v1"), h)
		case operator:
			control.Add(r.method, strings.TrimPrefix(r.path, "/api/v1"), h, requireRole(models.RoleOperator))
		case admin:
			control.Add(r.method, strings.TrimPrefix(r.path, "/api/v1"), h, requireRole(models.RoleAdmin))
		}
	}
}

// Route is one registered method and path, in Echo's syntax (`:name` parameters).
type Route struct {
	Method, Path string
}

// Routes lists every route the server answers, for tests that hold the OpenAPI
// document to the code.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.e.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}

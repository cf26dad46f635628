package api

import (
	"net/http"
	"slices"
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
// handler and what it requires (its access: public, API key, or a signed-in role).
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
	{http.MethodPost, "/api/v1/auth/refresh", (*Server).tokenRefresh, viewer},

	{http.MethodGet, "/api/v1/topics", (*Server).topicList, viewer},
	{http.MethodPost, "/api/v1/topics", (*Server).topicCreate, operator},
	{http.MethodGet, "/api/v1/topics/:topic", (*Server).topicGet, viewer},
	{http.MethodPatch, "/api/v1/topics/:topic", (*Server).topicUpdate, operator},
	{http.MethodDelete, "/api/v1/topics/:topic", (*Server).topicDelete, operator},
	{http.MethodPost, "/api/v1/topics/:topic/move", (*Server).topicMove, operator},
	{http.MethodGet, "/api/v1/topics/:topic/messages", (*Server).messageList, viewer},
	{http.MethodGet, "/api/v1/messages/:id", (*Server).messageGet, viewer},
	{http.MethodDelete, "/api/v1/messages/:id", (*Server).messageCancel, operator},

	{http.MethodGet, "/api/v1/groups", (*Server).groupList, viewer},
	{http.MethodPost, "/api/v1/groups", (*Server).groupCreate, operator},
	{http.MethodGet, "/api/v1/groups/:group", (*Server).groupGet, viewer},
	{http.MethodPatch, "/api/v1/groups/:group", (*Server).groupUpdate, operator},
	{http.MethodDelete, "/api/v1/groups/:group", (*Server).groupDelete, operator},
	{http.MethodPost, "/api/v1/groups/:group/pause", (*Server).groupPause, operator},
	{http.MethodPost, "/api/v1/groups/:group/resume", (*Server).groupResume, operator},
	{http.MethodGet, "/api/v1/groups/:group/stats", (*Server).groupStats, viewer},
	{http.MethodGet, "/api/v1/groups/:group/attempts", (*Server).groupAttempts, viewer},
	{http.MethodPost, "/api/v1/groups/:group/queues/:queue/skip", (*Server).queueSkip, operator},
	{http.MethodPost, "/api/v1/groups/:group/queues/:queue/resume", (*Server).queueResume, operator},
	{http.MethodPost, "/api/v1/groups/:group/blocked-keys/skip", (*Server).keySkip, operator},
	{http.MethodPost, "/api/v1/groups/:group/blocked-keys/resume", (*Server).keyResume, operator},
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

	{http.MethodGet, "/api/v1/schedules", (*Server).scheduleList, viewer},
	{http.MethodPost, "/api/v1/schedules", (*Server).scheduleCreate, operator},
	{http.MethodGet, "/api/v1/schedules/:schedule", (*Server).scheduleGet, viewer},
	{http.MethodPatch, "/api/v1/schedules/:schedule", (*Server).scheduleUpdate, operator},
	{http.MethodDelete, "/api/v1/schedules/:schedule", (*Server).scheduleDelete, operator},
	{http.MethodPost, "/api/v1/schedules/:schedule/pause", (*Server).schedulePause, operator},
	{http.MethodPost, "/api/v1/schedules/:schedule/resume", (*Server).scheduleResume, operator},

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

	{http.MethodGet, "/api/v1/nodes", (*Server).nodeList, viewer},
	{http.MethodPost, "/api/v1/nodes", (*Server).nodeCreate, admin},
	{http.MethodGet, "/api/v1/nodes/:id", (*Server).nodeGet, viewer},
	{http.MethodPatch, "/api/v1/nodes/:id", (*Server).nodeUpdate, admin},
	{http.MethodPost, "/api/v1/nodes/:id/drain", (*Server).nodeDrain, admin},
}

// register adds routeTable to e. Routes under /v1 and /api/v1 hang off groups
// whose middleware authenticates first, so an unknown path below them answers 401
// to a caller without credentials, as any route there would. Every GET route also
// answers HEAD (RFC 9110 §9.3.2), and a known path asked with another method
// answers 405 with Allow, whatever the credentials.
func (s *Server) register(e *echo.Echo) {
	data := e.Group("/v1", s.publishDeadline, s.requireAPIKey)
	control := e.Group("/api/v1", s.requireJWT, validPathNames)
	allowed := map[string][]string{} // path → methods, in table order
	var paths []string
	for _, r := range routeTable {
		methods := []string{r.method}
		if r.method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		if allowed[r.path] == nil {
			paths = append(paths, r.path)
		}
		allowed[r.path] = append(allowed[r.path], methods...)
		h := func(c echo.Context) error { return r.handler(s, c) }
		for _, m := range methods {
			var added *echo.Route
			switch r.access {
			case public:
				added = e.Add(m, r.path, h)
			case publisher:
				added = data.Add(m, strings.TrimPrefix(r.path, "/v1"), h)
			case viewer:
				added = control.Add(m, strings.TrimPrefix(r.path, "/api/v1"), h)
			case operator:
				added = control.Add(m, strings.TrimPrefix(r.path, "/api/v1"), h, requireRole(models.RoleOperator))
			case admin:
				added = control.Add(m, strings.TrimPrefix(r.path, "/api/v1"), h, requireRole(models.RoleAdmin))
			}
			if m == http.MethodHead {
				added.Name = derivedRoute
			}
		}
	}
	for _, p := range paths {
		allow := strings.Join(allowed[p], ", ")
		for _, m := range otherMethods(allowed[p]) {
			e.Add(m, p, func(c echo.Context) error {
				c.Response().Header().Set(echo.HeaderAllow, allow)
				return problem(ProblemMethodNotAllowed, c.Request().Method+" is not allowed here; allowed: "+allow)
			}).Name = derivedRoute
		}
	}
}

// derivedRoute names the routes register adds beside the table (HEAD for GET,
// 405 answers), which Routes leaves out.
const derivedRoute = "herald.derived"

// otherMethods returns the common methods not in have.
func otherMethods(have []string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if !slices.Contains(have, m) {
			out = append(out, m)
		}
	}
	return out
}

// Route is one registered method and path, in Echo's syntax (`:name` parameters).
type Route struct {
	Method, Path string
}

// Routes lists every route of the table the server answers (not the HEAD and 405
// routes derived from it), for tests that hold the OpenAPI
// document to the code.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.e.Routes() {
		if r.Name == derivedRoute {
			continue
		}
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}

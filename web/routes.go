package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/heraldhq/herald/models"
)

// Routes mounts the web console (operators' pages over control) under /console, and the landing page at
// /: server-rendered pages signed in with an HttpOnly SameSite=Strict session cookie
// holding the JWT, every form protected against CSRF (Sec-Fetch-Site, else a token
// in the form), and embedded static files. Viewers read; operators change; admins
// manage users and read the audit log.
func (s *Console) Routes(e *echo.Echo) {
	e.GET("/", func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, Index()) })
	e.GET(consolePath, func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, consolePath+"/") })
	static := http.StripPrefix(consolePath+"/static/", http.FileServerFS(Static()))
	e.GET(consolePath+"/static/*", echo.WrapHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		static.ServeHTTP(w, r)
	})))

	csrf := middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup: "form:_csrf", CookieName: "herald_csrf", CookiePath: consolePath, CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteStrictMode, CookieSecure: s.cookieSecure, ContextKey: "csrf",
		ErrorHandler: func(err error, c echo.Context) error {
			return s.consolePage(func(echo.Context) error {
				return failure(http.StatusForbidden, "the form expired or came from another site; reload the page and try again")
			})(c)
		},
	})
	pub := e.Group(consolePath, s.markCookies, s.asPage(limitForm), csrf)
	pub.GET("/login", s.consolePage(s.consoleLoginForm))
	pub.POST("/login", s.consolePage(s.consoleLogin))
	pub.POST("/logout", s.consolePage(s.consoleLogout))

	con := e.Group(consolePath, s.markCookies, s.asPage(limitForm), csrf, s.requireSession, s.asPage(validPathNames))
	op := requireConsoleRole(models.RoleOperator)
	adm := requireConsoleRole(models.RoleAdmin)
	page := s.consolePage
	con.GET("/", page(s.consoleOverview))
	con.GET("/topics", page(s.consoleTopics))
	con.POST("/topics", page(op(s.consoleTopicCreate)))
	con.GET("/topics/:topic", page(s.consoleTopic))
	con.POST("/topics/:topic/queues", page(op(s.consoleTopicQueues)))
	con.POST("/topics/:topic/delete", page(op(s.consoleTopicDelete)))
	con.POST("/topics/:topic/move", page(op(s.consoleTopicMove)))
	con.POST("/topics/:topic/retention", page(op(s.consoleTopicRetention)))
	con.GET("/messages/:id", page(s.consoleMessage))
	con.POST("/messages/:id/cancel", page(op(s.consoleMessageCancel)))
	con.GET("/schedules", page(s.consoleSchedules))
	con.POST("/schedules", page(op(s.consoleScheduleCreate)))
	con.POST("/schedules/:schedule/pause", page(op(s.consoleScheduleAction("pause"))))
	con.POST("/schedules/:schedule/resume", page(op(s.consoleScheduleAction("resume"))))
	con.POST("/schedules/:schedule/delete", page(op(s.consoleScheduleAction("delete"))))
	con.POST("/messages/:id/resend", page(op(s.consoleMessageResend)))
	con.GET("/groups", page(s.consoleGroups))
	con.POST("/groups", page(op(s.consoleGroupCreate)))
	con.GET("/groups/:group", page(s.consoleGroup))
	con.POST("/groups/:group/settings", page(op(s.consoleGroupSettings)))
	con.POST("/groups/:group/pause", page(op(s.consoleGroupStatus(models.GroupPaused))))
	con.POST("/groups/:group/resume", page(op(s.consoleGroupStatus(models.GroupRunning))))
	con.POST("/groups/:group/reset", page(op(s.consoleGroupReset)))
	con.POST("/groups/:group/rotate", page(op(s.consoleGroupRotate)))
	con.POST("/groups/:group/secret", page(op(s.consoleGroupSecret)))
	con.POST("/groups/:group/test", page(op(s.consoleGroupTest)))
	con.POST("/groups/:group/queues/:queue/skip", page(op(s.consoleQueueAction(true))))
	con.POST("/groups/:group/queues/:queue/resume", page(op(s.consoleQueueAction(false))))
	con.POST("/groups/:group/blocked-keys/skip", page(op(s.consoleKeyAction(true))))
	con.POST("/groups/:group/blocked-keys/resume", page(op(s.consoleKeyAction(false))))
	con.POST("/groups/:group/delete", page(op(s.consoleGroupDelete)))
	con.GET("/dead-letters", page(s.consoleDeadLetters))
	con.POST("/dead-letters/:group/redrive", page(op(s.consoleDeadLetterAction(true))))
	con.POST("/dead-letters/:group/purge", page(op(s.consoleDeadLetterAction(false))))
	con.GET("/api-keys", page(s.consoleAPIKeys))
	con.POST("/api-keys", page(op(s.consoleAPIKeyCreate)))
	con.POST("/api-keys/:id/revoke", page(op(s.consoleAPIKeyRevoke)))
	con.GET("/users", page(adm(s.consoleUsers)))
	con.POST("/users", page(adm(s.consoleUserCreate)))
	con.POST("/users/:id/role", page(adm(s.consoleUserRole)))
	con.POST("/users/:id/revoke", page(adm(s.consoleUserRevoke)))
	con.POST("/users/:id/delete", page(adm(s.consoleUserDelete)))
	con.GET("/audit", page(adm(s.consoleAudit)))
	con.GET("/nodes", page(s.consoleNodes))
	con.POST("/nodes", page(adm(s.consoleNodeCreate)))
	con.POST("/nodes/:id/weight", page(adm(s.consoleNodeWeight)))
	con.POST("/nodes/:id/retire", page(adm(s.consoleNodeRetire)))
}

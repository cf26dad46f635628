// Package api is Herald's HTTP transport (Echo): the /v1 data plane where publishers
// post messages with API keys, the /api/v1 control plane for operators with JWTs,
// health probes and the OpenAPI document. Errors leave as application/problem+json.
// It holds no SQL (models/store does) and never imports dispatcher or worker.
package api

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
	"github.com/heraldhq/herald/web"
)

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPI returns the API description served at /openapi.yaml.
func OpenAPI() []byte { return openapiYAML }

// Server serves the api role. Create it with New; Handler exposes routes for tests.
type Server struct {
	cfg      config.Config
	st       *store.Store
	rdb      redis.UniversalClient
	writer   *groupcommit.Writer
	notifier *notify.Notifier
	guard    ssrf.Guard
	log      *slog.Logger
	e        *echo.Echo

	keys   sync.Map // prefix → *cachedKey
	topics sync.Map // name → *cachedTopic
	rr     sync.Map // topic id → *uint64 round-robin counter
	logins *loginThrottle
	stats  statsRollup // published counts waiting for the next rollup flush
}

// New wires the routes. The group-commit writer must be running (its Run) for
// publishes to complete.
func New(cfg config.Config, st *store.Store, rdb redis.UniversalClient, writer *groupcommit.Writer, n *notify.Notifier, guard ssrf.Guard, log *slog.Logger) *Server {
	s := &Server{cfg: cfg, st: st, rdb: rdb, writer: writer, notifier: n, guard: guard, log: log, logins: newLoginThrottle()}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.writeProblem
	e.IPExtractor = echo.ExtractIPDirect()
	s.e = e

	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", s.ready)
	e.GET("/openapi.yaml", func(c echo.Context) error { return c.Blob(http.StatusOK, "application/yaml", openapiYAML) })
	e.GET("/", func(c echo.Context) error { return c.HTMLBlob(http.StatusOK, web.Index()) })

	v1 := e.Group("/v1", s.publishDeadline, s.requireAPIKey)
	v1.POST("/topics/:topic/messages", s.publish)

	e.POST("/api/v1/auth/login", s.login)
	admin := e.Group("/api/v1", s.requireJWT, validPathNames)
	admin.GET("/topics", s.topicList)
	admin.GET("/topics/:topic", s.topicGet)
	admin.POST("/topics", s.topicCreate, requireRole(models.RoleOperator))
	admin.GET("/groups", s.groupList)
	admin.GET("/groups/:group", s.groupGet)
	admin.POST("/groups", s.groupCreate, requireRole(models.RoleOperator))
	admin.POST("/groups/:group/pause", s.groupPause, requireRole(models.RoleOperator))
	admin.POST("/groups/:group/resume", s.groupResume, requireRole(models.RoleOperator))
	admin.POST("/api-keys", s.apiKeyCreate, requireRole(models.RoleOperator))
	s.controlRoutes(admin)
	s.failureRoutes(admin)
	s.consoleRoutes(e)
	e.RouteNotFound("/*", func(c echo.Context) error { return problem("not-found", "no route for "+c.Request().URL.Path) })
	return s
}

// Handler returns the HTTP handler, for tests and benchmarks.
func (s *Server) Handler() http.Handler { return s.e }

// Serve answers requests on ln until ctx ends, then drains in-flight requests for up to 10 s.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.e, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	statsDone := make(chan struct{})
	statsCtx, stopStats := context.WithCancel(ctx)
	go func() { s.runStats(statsCtx); close(statsDone) }()
	defer func() { stopStats(); <-statsDone }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.st.Ping(ctx); err != nil {
		return problem("unavailable", "mysql: "+err.Error())
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return problem("unavailable", "redis: "+err.Error())
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

type cachedTopic struct {
	t  *models.Topic
	at time.Time
}

// topic returns a topic from a 5 s cache; misses are not cached, so a new topic is
// usable at once.
func (s *Server) topic(ctx context.Context, name string) (*models.Topic, error) {
	if v, ok := s.topics.Load(name); ok {
		ct := v.(*cachedTopic)
		if time.Since(ct.at) < 5*time.Second {
			return ct.t, nil
		}
	}
	t, err := s.st.TopicGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	s.topics.Store(name, &cachedTopic{t: t, at: time.Now()})
	return t, nil
}

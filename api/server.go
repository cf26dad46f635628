// Package api is Herald's REST transport (Echo): the /v1 data plane where publishers
// post messages with API keys, the /api/v1 control plane for operators with JWTs,
// health probes and the OpenAPI document, all listed in one route table
// (routes.go). Control-plane changes are control's actions; this package decodes
// requests, shapes responses (DTOs) and turns errors into application/problem+json
// with a stable type. It holds no SQL (models/store does) and never imports the
// console (web), dispatcher or worker; the console is mounted beside it (Mount).
package api

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/internal/aheadcache"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/metrics"
	"github.com/heraldhq/herald/models"
)

//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPI returns the API description served at /openapi.yaml.
func OpenAPI() []byte { return openapiYAML }

// Options are the settings the api role reads, passed as values (app fills them
// from config.Config).
type Options struct {
	// PublishTimeout bounds a publish's database work (HERALD_PUBLISH_TIMEOUT); past it
	// the answer is 503 with Retry-After. 0 means groupcommit.DefaultFlushTimeout (10 s).
	PublishTimeout time.Duration
}

// Server serves the api role. Create it with New; Handler exposes routes for tests.
type Server struct {
	opts   Options
	ctl    *control.Control
	rdb    redis.UniversalClient
	writer *groupcommit.Writer
	log    *slog.Logger
	e      *echo.Echo

	keys   *aheadcache.Cache[string, *models.APIKey] // publishers' keys by prefix (apiKey)
	topics *aheadcache.Cache[string, *models.Topic]  // topics by name (topic)
	stats  statsRollup                               // published counts waiting for the next rollup flush
	series topicSeries                               // topics with a published-messages series (topic_series.go)
}

// New wires the routes over ctl, the process's one Control (every control-plane
// read and change, the publishers' keys and topics), rdb (the readiness probe) and
// writer, which must be running (its Run) for publishes to complete. It panics when
// one of them, or log, is nil.
func New(opts Options, ctl *control.Control, rdb redis.UniversalClient, writer *groupcommit.Writer, log *slog.Logger) *Server {
	if ctl == nil || rdb == nil || writer == nil || log == nil {
		panic("api: New needs a Control, a Redis client, a group-commit writer and a logger")
	}
	s := &Server{opts: opts, ctl: ctl, rdb: rdb, writer: writer, log: log}
	gone := func(err error) bool { return errors.Is(err, models.ErrNotFound) }
	s.keys = aheadcache.New(aheadcache.Options[string, *models.APIKey]{TTL: keyCacheTTL, RefreshDelay: refreshAfter, Load: ctl.APIKeyByPrefix, Gone: gone,
		Loaded: func(ctx context.Context, _ string, k *models.APIKey) { _ = ctl.TouchAPIKey(ctx, k.ID) }})
	s.topics = aheadcache.New(aheadcache.Options[string, *models.Topic]{TTL: topicCacheTTL, RefreshDelay: refreshAfter, Load: ctl.GetTopic, Gone: gone})
	s.ctl.OnTopicChange(func(name string) { s.topics.Drop(name); s.series.changed() })
	s.ctl.OnKeyRevoke(func(prefix string) { s.keys.Drop(prefix) })
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.writeProblem
	e.IPExtractor = echo.ExtractIPDirect()
	e.Use(observeRequests)
	s.e = e

	s.register(e)
	e.RouteNotFound("/*", func(c echo.Context) error { return problem(ProblemNotFound, "no route for "+c.Request().URL.Path) })
	return s
}

// Mount lets another transport (the console) add its routes to this server, e.g.
// under /console. The REST API's own paths stay as they are.
func (s *Server) Mount(register func(e *echo.Echo)) { register(s.e) }

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
	seriesDone := make(chan struct{})
	go func() { s.runTopicSeries(statsCtx); close(seriesDone) }()
	defer func() { stopStats(); <-statsDone; <-seriesDone }()
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

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openapiYAML)
}

func (s *Server) ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.ctl.Ping(ctx); err != nil {
		return problem(ProblemUnavailable, "mysql: "+err.Error())
	}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return problem(ProblemUnavailable, "redis: "+err.Error())
	}
	// A db node other than the control database that is down is reported, not fatal:
	// publishes to its queues answer 503 while the others go on.
	nodes, err := s.ctl.NodesPing(ctx)
	if err == nil {
		metrics.DBNodeUp.Reset() // a node retired since the last check drops out
	}
	if err != nil || len(nodes) <= 1 {
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
	health := make(map[string]string, len(nodes))
	for id, nerr := range nodes {
		key := strconv.FormatInt(id, 10)
		if nerr != nil {
			health[key] = "down: " + nerr.Error()
			metrics.DBNodeUp.WithLabelValues(key).Set(0)
		} else {
			health[key] = "up"
			metrics.DBNodeUp.WithLabelValues(key).Set(1)
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "nodes": health})
}

// topicCacheTTL is how long a publish trusts a cached topic (5 s); topic changes made
// through this server drop its entry at once.
const topicCacheTTL = 5 * time.Second

// topic returns a topic from a 5 s refresh-ahead cache (aheadcache); misses are
// not cached, so a new topic is usable at once, and a topic published to at least
// every 2.5 s never waits for the lookup.
func (s *Server) topic(ctx context.Context, name string) (*models.Topic, error) {
	return s.topics.Get(ctx, name)
}

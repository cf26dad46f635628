package heraldtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/dispatcher"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/maintenance"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Herald is an in-process Herald for one test: every role on a random loopback port,
// its own database and Redis namespace.
type Herald struct {
	t       testing.TB
	BaseURL string
	DSN     string
	Store   *store.Store
	Redis   *redis.Client
	Cfg     config.Config
	token   string
	stops   []func()
	// dispatcher and maintenance are the test signals of the roles last started.
	dispatcher  *dispatcher.TestSignals
	maintenance *maintenance.TestSignals
}

// AdminUser and AdminPassword log into every test Herald.
const (
	AdminUser     = "admin"
	AdminPassword = "correct horse battery"
)

// TestConfig returns settings for a test Herald on dsn and namespace ns: fast
// deadlines and loopback endpoints allowed.
func TestConfig(dsn, ns string) config.Config {
	os.Setenv("HERALD_JWT_SECRET", "test-secret-test-secret-test-secret-0123")
	cfg, _ := config.Load()
	cfg.MySQLDSN, cfg.RedisAddr, cfg.Namespace = dsn, RedisAddr(), ns
	cfg.MetricsAddr = ""
	// Tests run many Heralds in parallel against one server (max_connections 151 by
	// default): a small pool per Herald keeps them under it.
	cfg.MySQLMaxConns = 16
	cfg.BcryptCost = bcrypt.MinCost // tests check logic, not the work factor
	cfg.AllowPrivateEndpoints = true
	cfg.EncryptionKey = "6865726c642d746573742d6b65792d3332627974657321212121212121212121"
	cfg.Dispatcher.JobDeadlineBase = 2 * time.Second
	cfg.Dispatcher.GapTimeout = 2 * time.Second
	cfg.Worker.HeartbeatTTL = 1500 * time.Millisecond
	cfg.Dispatcher.ReturnBackoff = 200 * time.Millisecond
	cfg.Dispatcher.HeartbeatInterval = 500 * time.Millisecond
	cfg.Worker.ShutdownTimeout = 5 * time.Second
	return cfg
}

// StartHerald starts every role with TestConfig, changed by mutate if not nil.
func StartHerald(t testing.TB, mutate func(*config.Config)) *Herald {
	t.Helper()
	return StartHeraldRoles(t, app.All, mutate)
}

// StartHeraldRoles is StartHerald for a subset of roles; the api role is required
// (tests drive Herald through it).
func StartHeraldRoles(t testing.TB, roles app.Roles, mutate func(*config.Config)) *Herald {
	t.Helper()
	dsn, st := Database(t)
	rdb, ns := Redis(t)
	cfg := TestConfig(dsn, ns)
	if mutate != nil {
		mutate(&cfg)
	}
	h := &Herald{t: t, DSN: dsn, Store: st, Redis: rdb, Cfg: cfg}
	h.Start(roles)
	hash, err := auth.HashPassword(AdminPassword, cfg.BcryptCost)
	require.NoError(t, err)
	require.NoError(t, st.Accounts().UserCreate(context.Background(), &models.User{Username: AdminUser, PasswordHash: hash, Role: models.RoleAdmin}))
	return h
}

// Start runs the given roles in this process; Stop ends them. The api listens on a
// new random port each time.
func (h *Herald) Start(roles app.Roles) {
	h.t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("HERALD_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.Open(ctx, h.Cfg, roles, log)
	require.NoError(h.t, err)
	if a.Dispatcher != nil {
		a.Dispatcher.TestSignals.Init()
		h.dispatcher = &a.Dispatcher.TestSignals
	}
	if a.Maintenance != nil {
		a.Maintenance.TestSignals.Init()
		h.maintenance = &a.Maintenance.TestSignals
	}
	var ln net.Listener
	if roles.API {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(h.t, err)
		h.BaseURL = "http://" + ln.Addr().String()
	}
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, ln); a.Close(); close(done) }()
	h.stops = append(h.stops, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			h.t.Errorf("herald did not stop within 30 s")
		}
	})
	if len(h.stops) == 1 {
		h.t.Cleanup(h.Stop)
	}
	if roles.API {
		require.Eventually(h.t, func() bool {
			resp, err := http.Get(h.BaseURL + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == 200
		}, 10*time.Second, 10*time.Millisecond)
	}
}

// DispatcherSignals returns the test signals of the dispatcher role last started
// (ownership settled, commit applied); it fails the test if none was.
func (h *Herald) DispatcherSignals() *dispatcher.TestSignals {
	h.t.Helper()
	require.NotNil(h.t, h.dispatcher, "no dispatcher role started")
	return h.dispatcher
}

// MaintenanceSignals returns the test signals of the maintenance role last started
// (duty ran); it fails the test if none was.
func (h *Herald) MaintenanceSignals() *maintenance.TestSignals {
	h.t.Helper()
	require.NotNil(h.t, h.maintenance, "no maintenance role started")
	return h.maintenance
}

// Stop ends every started set of roles, newest first, and waits for their graceful
// shutdown.
func (h *Herald) Stop() {
	for i := len(h.stops) - 1; i >= 0; i-- {
		h.stops[i]()
	}
	h.stops = nil
}

// Env returns HERALD_* variables that point a `herald` subprocess at this test's
// database, Redis namespace and timings; WorkerEnv adds a lone worker's.
func (h *Herald) Env() []string {
	c := h.Cfg
	return []string{
		"HERALD_MYSQL_DSN=" + c.MySQLDSN, "HERALD_REDIS_ADDR=" + c.RedisAddr, "HERALD_NAMESPACE=" + c.Namespace,
		"HERALD_MYSQL_MAX_CONNS=" + strconv.Itoa(c.MySQLMaxConns),
		"HERALD_METRICS_ADDR=127.0.0.1:0", "HERALD_ALLOW_PRIVATE_ENDPOINTS=true",
		"HERALD_REDIS_DB=" + strconv.Itoa(c.RedisDB),
		"HERALD_ENCRYPTION_KEY=" + c.EncryptionKey,
		"HERALD_REDIS_MODE=" + c.RedisMode, "HERALD_REDIS_MASTER_NAME=" + c.RedisMasterName,
	}
}

// WorkerEnv returns the timings of a `herald worker` subprocess (one that takes its
// jobs over Redis; `herald all` refuses them).
func (h *Herald) WorkerEnv() []string {
	c := h.Cfg
	return []string{
		"HERALD_WORKER_HEARTBEAT_TTL=" + c.Worker.HeartbeatTTL.String(),
		"HERALD_WORKER_SHUTDOWN_TIMEOUT=" + c.Worker.ShutdownTimeout.String(),
	}
}

// Do sends a JSON request (body marshalled unless it is []byte) with an optional
// bearer token and returns the status and response body.
func (h *Herald) Do(method, path, bearer string, body any, headers ...string) (int, []byte, http.Header) {
	h.t.Helper()
	var r io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			b, err = json.Marshal(body)
			require.NoError(h.t, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.BaseURL+path, r)
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, out, resp.Header
}

// Token logs in as the test admin once and returns the JWT.
func (h *Herald) Token() string {
	h.t.Helper()
	if h.token != "" {
		return h.token
	}
	code, body, _ := h.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": AdminUser, "password": AdminPassword})
	require.Equal(h.t, 200, code, string(body))
	var out struct{ Token string }
	require.NoError(h.t, json.Unmarshal(body, &out))
	h.token = out.Token
	return h.token
}

// Admin sends an authenticated /api/v1 request and requires want as the status.
func (h *Herald) Admin(method, path string, body any, want int) []byte {
	h.t.Helper()
	code, out, _ := h.Do(method, "/api/v1"+path, h.Token(), body)
	require.Equal(h.t, want, code, "%s %s: %s", method, path, out)
	return out
}

// CreateTopic creates a topic with n queues.
func (h *Herald) CreateTopic(name string, n int) {
	h.Admin("POST", "/topics", map[string]any{"name": name, "queues": n}, 201)
}

// CreateGroup creates a group from body and returns its signing secret.
func (h *Herald) CreateGroup(body map[string]any) string {
	out := h.Admin("POST", "/groups", body, 201)
	var g struct {
		SigningSecret string `json:"signing_secret"`
	}
	require.NoError(h.t, json.Unmarshal(out, &g))
	return g.SigningSecret
}

// CreateAPIKey returns a new API key for the topic patterns.
func (h *Herald) CreateAPIKey(topics ...string) string {
	out := h.Admin("POST", "/api-keys", map[string]any{"name": "test", "topics": topics}, 201)
	var k struct{ Key string }
	require.NoError(h.t, json.Unmarshal(out, &k))
	return k.Key
}

// Published is one stored message as the publish response names it.
type Published struct {
	ID     string `json:"id"`
	Queue  int64  `json:"queue"`
	Offset int64  `json:"offset"`
	// DeliverAt is a delayed message's due time (its ID is dly_…).
	DeliverAt string `json:"deliver_at"`
}

// Publish posts messages and requires 201.
func (h *Herald) Publish(key, topic string, msgs ...map[string]any) []Published {
	h.t.Helper()
	code, body, _ := h.Do("POST", "/v1/topics/"+topic+"/messages", key, map[string]any{"messages": msgs})
	require.Equal(h.t, 201, code, string(body))
	var out struct{ Messages []Published }
	require.NoError(h.t, json.Unmarshal(body, &out))
	return out.Messages
}

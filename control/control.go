// Package control holds Herald's control-plane actions: creating and changing
// topics, consumer groups, API keys and users, moving offsets, rotating secrets,
// redriving and purging dead letters. Every transport (the REST API in api, the
// console in web, the herald CLI) calls the same action with a plain context and an
// Actor, so each validation rule and each audit write exists once.
//
// Actions return models errors: sentinels (models.ErrNotFound, ErrConflict, ErrInUse,
// ErrLastAdmin …) wrapped with context, or a *models.ValidationError naming each bad
// field by JSON pointer (as the REST body spells it). A refused endpoint address also
// matches ssrf.ErrBlocked. Each transport translates them: api into problem+json, web
// into form messages, the CLI into an exit message. The package imports models,
// models/store and leaf internals only, never a transport.
package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// Actor is who performs an action, as the audit log records it: Username (a user,
// or "system" / "cli" for actions without one), SourceIP (empty when none) and Via,
// the transport ("console", "cli"; empty for the REST API), which some entries note.
// Role is the user's role, which the few decisions made inside control (keeping
// endpoint auth across a change of origin) check; the actors without a user act
// as admin.
type Actor struct {
	Username string
	SourceIP string
	Via      string
	Role     models.Role
}

// System is the actor of actions no user asked for.
var System = Actor{Username: "system", Role: models.RoleAdmin}

// Config wires a Control; the composition root (app/) builds the one Control
// of a process and hands it to every transport. Store, Redis, Notifier and Log are
// required (New refuses a Config without one): Notifier tells dispatchers and
// workers of every group and queue change, Redis lets an offset reset or a group
// delete raise the workers' cursor fences (internal/fence) under Keys before it
// answers, Log receives audit write failures. Guard checks endpoint URLs (no
// private or metadata addresses unless AllowPrivate). JWTSecret signs and checks
// the tokens of IssueToken and Authenticate; empty (a CLI process, which serves no
// sessions) makes both refuse. BcryptCost is the work factor of new password
// hashes (0: auth.DefaultBcryptCost, 12). DeletedGroupGrace is how long a deleted
// group's dead letters and attempt log are kept (0: DefaultDeletedGroupGrace, 7 days).
type Config struct {
	Store      *store.Store
	Redis      redis.Scripter
	Keys       delivery.Keys
	Notifier   *notify.Notifier
	Guard      ssrf.Guard
	Log        *slog.Logger
	JWTSecret  string
	BcryptCost int

	DeletedGroupGrace time.Duration
	// PublicURL is the `iss` of push tokens on test sends (HERALD_PUBLIC_URL; empty:
	// test sends carry none).
	PublicURL string
}

// ErrMissingDependency is New's error for a Config without a required dependency.
var ErrMissingDependency = errors.New("control: missing dependency")

// Control performs the actions. Create it with New; it is safe for concurrent use.
type Control struct {
	st       *store.Store
	rdb      redis.Scripter
	keys     delivery.Keys
	notifier *notify.Notifier
	guard    ssrf.Guard
	log      *slog.Logger
	secret   []byte
	cost     int
	issuer   string

	logins            *loginThrottle // shared by every transport's login
	deletedGroupGrace time.Duration

	onTopicChange hooks // names of changed or deleted topics
	onKeyRevoke   hooks // prefixes of revoked API keys
}

// hooks are callbacks of one kind, safe to add while others run.
type hooks struct {
	mu  sync.Mutex
	fns []func(string)
}

func (h *hooks) add(fn func(string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fns = append(h.fns, fn)
}

func (h *hooks) run(arg string) {
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, fn := range fns {
		fn(arg)
	}
}

// New returns a Control for cfg. Errors: ErrMissingDependency naming the first
// required field that is nil.
func New(cfg Config) (*Control, error) {
	switch {
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: Store", ErrMissingDependency)
	case cfg.Redis == nil:
		return nil, fmt.Errorf("%w: Redis", ErrMissingDependency)
	case cfg.Notifier == nil:
		return nil, fmt.Errorf("%w: Notifier", ErrMissingDependency)
	case cfg.Log == nil:
		return nil, fmt.Errorf("%w: Log", ErrMissingDependency)
	}
	grace := cfg.DeletedGroupGrace
	if grace <= 0 {
		grace = DefaultDeletedGroupGrace
	}
	return &Control{st: cfg.Store, rdb: cfg.Redis, keys: cfg.Keys, notifier: cfg.Notifier, guard: cfg.Guard, log: cfg.Log,
		secret: []byte(cfg.JWTSecret), cost: cfg.BcryptCost, deletedGroupGrace: grace, logins: newLoginThrottle(), issuer: cfg.PublicURL}, nil
}

// OnTopicChange registers fn to run after a topic's queues change or the topic is
// deleted, e.g. to drop an api instance's topic cache entry.
func (c *Control) OnTopicChange(fn func(name string)) { c.onTopicChange.add(fn) }

// OnKeyRevoke registers fn to run after an API key is revoked, e.g. to drop an api
// instance's key cache entry so the revocation is immediate there.
func (c *Control) OnKeyRevoke(fn func(prefix string)) { c.onKeyRevoke.add(fn) }

func (c *Control) notifyGroup(ctx context.Context, id int64) {
	_ = c.notifier.Group(context.WithoutCancel(ctx), id)
}

func (c *Control) notifyGroups(ctx context.Context, ids []int64) {
	_ = c.notifier.Groups(context.WithoutCancel(ctx), ids)
}

func (c *Control) notifyQueues(ctx context.Context, ids []int64) {
	_ = c.notifier.Queues(context.WithoutCancel(ctx), ids)
}

// Record appends one entry to the audit log for an event a transport observes
// itself (a sign-in, a secret shown). A failed write is logged, not returned: the
// action it records has already happened.
func (c *Control) Record(ctx context.Context, a Actor, action, subject string, before, after any) {
	if a.Username == "" {
		a.Username = System.Username
	}
	if err := c.st.AuditRecord(context.WithoutCancel(ctx), a.Username, action, subject, a.SourceIP, before, after); err != nil {
		c.log.Warn("audit log write failed", "action", action, "err", err)
	}
}

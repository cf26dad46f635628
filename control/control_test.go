package control_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/notify"
	"github.com/heraldhq/herald/internal/ssrf"
	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher.func1"))
}

// bundle is one test's Control on its own database, acting as actor.
type bundle struct {
	ctx   context.Context
	ctl   *control.Control
	st    *store.Store
	actor control.Actor
}

func setup(t *testing.T) *bundle {
	t.Helper()
	_, st := heraldtest.Database(t)
	return &bundle{ctx: context.Background(), st: st, actor: control.Actor{Username: "alice", SourceIP: "192.0.2.7"},
		ctl: newControl(t, control.Config{Store: st, Guard: ssrf.Guard{}, BcryptCost: bcrypt.MinCost})}
}

// newControl is control.New for cfg, with a Redis namespace of the test's own, its
// Notifier and a discarding Log where cfg leaves them out.
func newControl(t *testing.T, cfg control.Config) *control.Control {
	t.Helper()
	if cfg.Redis == nil {
		rdb, ns := heraldtest.Redis(t)
		cfg.Redis, cfg.Keys = rdb, delivery.Keys{Namespace: ns}
		cfg.Notifier = notify.New(rdb, cfg.Keys)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctl, err := control.New(cfg)
	require.NoError(t, err)
	return ctl
}

// audited returns the actions alice has in the audit log, oldest first.
func (b *bundle) audited(t *testing.T) []string {
	t.Helper()
	es, err := b.st.AuditList(b.ctx, store.AuditFilter{Actor: b.actor.Username}, 0, 500)
	require.NoError(t, err)
	out := make([]string, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		require.Equal(t, b.actor.SourceIP, es[i].SourceIP)
		out = append(out, es[i].Action)
	}
	return out
}

// requireFields asserts err is a validation error naming exactly pointers.
func requireFields(t *testing.T, err error, pointers ...string) {
	t.Helper()
	var v *models.ValidationError
	require.ErrorAs(t, err, &v)
	require.ErrorIs(t, err, models.ErrInvalid)
	var got []string
	for _, fe := range v.Errors {
		got = append(got, fe.Pointer)
	}
	require.Equal(t, pointers, got)
}

func ptr[T any](v T) *T { return &v }

func TestCreateAPIKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spec   control.APIKeySpec
		fields []string
	}{
		{"valid", control.APIKeySpec{Name: "billing", Topics: []string{"orders", "orders.*"}}, nil},
		{"empty name", control.APIKeySpec{Topics: []string{"orders"}}, []string{"/name"}},
		{"name too long", control.APIKeySpec{Name: strings.Repeat("n", 121), Topics: []string{"orders"}}, []string{"/name"}},
		{"control character", control.APIKeySpec{Name: "a\x07b", Topics: []string{"orders"}}, []string{"/name"}},
		{"no topics", control.APIKeySpec{Name: "billing"}, []string{"/topics"}},
		{"bad pattern", control.APIKeySpec{Name: "billing", Topics: []string{"orders", "Orders!"}}, []string{"/topics/1"}},
		{"everything wrong", control.APIKeySpec{}, []string{"/name", "/topics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			key, k, err := b.ctl.CreateAPIKey(b.ctx, b.actor, tc.spec)
			if tc.fields != nil {
				requireFields(t, err, tc.fields...)
				ks, err := b.st.Accounts().APIKeyList(b.ctx, 0, 10)
				require.NoError(t, err)
				require.Empty(t, ks, "nothing is stored")
				require.Empty(t, b.audited(t), "nothing is audited")
				return
			}
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(key, "hk_"+k.Prefix+"_"), key)
			stored, err := b.st.Accounts().APIKeyGetByPrefix(b.ctx, k.Prefix)
			require.NoError(t, err)
			require.Equal(t, tc.spec.Topics, stored.Topics)
			require.Equal(t, []string{"apikey.create"}, b.audited(t))
		})
	}
}

func TestRevokeAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, k, err := b.ctl.CreateAPIKey(b.ctx, b.actor, control.APIKeySpec{Name: "billing", Topics: []string{"orders"}})
	require.NoError(t, err)
	var dropped []string
	b.ctl.OnKeyRevoke(func(prefix string) { dropped = append(dropped, prefix) })
	r, err := b.ctl.RevokeAPIKey(b.ctx, b.actor, k.ID)
	require.NoError(t, err)
	require.NotNil(t, r.RevokedAt)
	require.Equal(t, []string{k.Prefix}, dropped, "caches are told")
	_, err = b.ctl.RevokeAPIKey(b.ctx, b.actor, k.ID+1000)
	require.ErrorIs(t, err, models.ErrNotFound)
	require.Equal(t, []string{"apikey.create", "apikey.revoke"}, b.audited(t))
}

func TestCreateUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spec   control.UserSpec
		fields []string
		role   models.Role
	}{
		{"valid, role defaults to viewer", control.UserSpec{Username: "bob", Password: "correct horse"}, nil, models.RoleViewer},
		{"admin", control.UserSpec{Username: "bob", Password: "correct horse", Role: models.RoleAdmin}, nil, models.RoleAdmin},
		{"empty username", control.UserSpec{Password: "correct horse"}, []string{"/username"}, ""},
		{"username too long", control.UserSpec{Username: strings.Repeat("u", 121), Password: "correct horse"}, []string{"/username"}, ""},
		{"unknown role", control.UserSpec{Username: "bob", Password: "correct horse", Role: "root"}, []string{"/role"}, ""},
		{"short password", control.UserSpec{Username: "bob", Password: "short"}, []string{"/password"}, ""},
		{"long password", control.UserSpec{Username: "bob", Password: strings.Repeat("p", 73)}, []string{"/password"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			u, err := b.ctl.CreateUser(b.ctx, b.actor, tc.spec)
			if tc.fields != nil {
				requireFields(t, err, tc.fields...)
				require.Empty(t, b.audited(t))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.role, u.Role)
			require.NotContains(t, u.PasswordHash, tc.spec.Password)
			_, err = b.ctl.CreateUser(b.ctx, b.actor, tc.spec)
			require.ErrorIs(t, err, models.ErrConflict, "usernames are unique")
			require.Equal(t, []string{"user.create"}, b.audited(t))
		})
	}
}

func TestUserChangesKeepAnAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin, err := b.ctl.CreateUser(b.ctx, b.actor, control.UserSpec{Username: "root", Password: "correct horse", Role: models.RoleAdmin})
	require.NoError(t, err)
	_, err = b.ctl.PatchUser(b.ctx, b.actor, admin.ID, control.UserPatch{Role: ptr(models.RoleViewer)})
	require.ErrorIs(t, err, models.ErrLastAdmin)
	require.ErrorIs(t, b.ctl.DeleteUser(b.ctx, b.actor, admin.ID), models.ErrLastAdmin)
	_, err = b.ctl.PatchUser(b.ctx, b.actor, admin.ID, control.UserPatch{Role: ptr(models.Role("root"))})
	requireFields(t, err, "/role")
	_, err = b.ctl.PatchUser(b.ctx, b.actor, admin.ID, control.UserPatch{Password: ptr("short")})
	requireFields(t, err, "/password")
	u, err := b.ctl.PatchUser(b.ctx, b.actor, admin.ID, control.UserPatch{Password: ptr("a new passphrase")})
	require.NoError(t, err)
	require.Greater(t, u.TokenVersion, admin.TokenVersion, "a new password signs the user out")
	require.NoError(t, b.ctl.RevokeTokens(b.ctx, b.actor, admin.ID))
	_, err = b.ctl.PatchUser(b.ctx, b.actor, admin.ID+1000, control.UserPatch{})
	require.ErrorIs(t, err, models.ErrNotFound)
	require.Equal(t, []string{"user.create", "user.update", "user.tokens.revoke"}, b.audited(t))
}

func TestTopics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spec   control.TopicSpec
		queues int
		err    error
	}{
		{"default queues", control.TopicSpec{Name: "orders"}, control.DefaultQueues, nil},
		{"one queue", control.TopicSpec{Name: "orders", Queues: ptr(1)}, 1, nil},
		{"no queues", control.TopicSpec{Name: "orders", Queues: ptr(0)}, 0, models.ErrInvalid},
		{"bad name", control.TopicSpec{Name: "Orders!"}, 0, models.ErrInvalid},
		{"reserved name", control.TopicSpec{Name: "orders.dlq"}, 0, models.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			topic, err := b.ctl.CreateTopic(b.ctx, b.actor, tc.spec)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Empty(t, b.audited(t))
				return
			}
			require.NoError(t, err)
			require.Len(t, topic.Queues, tc.queues)
			_, err = b.ctl.CreateTopic(b.ctx, b.actor, tc.spec)
			require.ErrorIs(t, err, models.ErrConflict)
			var changed []string
			b.ctl.OnTopicChange(func(name string) { changed = append(changed, name) })
			topic, err = b.ctl.PatchTopic(b.ctx, b.actor, "orders", control.TopicPatch{Queues: ptr(tc.queues + 1)})
			require.NoError(t, err)
			require.Len(t, topic.Queues, tc.queues+1)
			_, err = b.ctl.PatchTopic(b.ctx, b.actor, "orders", control.TopicPatch{Queues: ptr(1)})
			require.ErrorIs(t, err, models.ErrInvalid, "topics never shrink")
			_, err = b.ctl.DeleteTopic(b.ctx, b.actor, "orders", false)
			require.NoError(t, err)
			_, err = b.ctl.DeleteTopic(b.ctx, b.actor, "orders", false)
			require.ErrorIs(t, err, models.ErrNotFound)
			require.Equal(t, []string{"orders", "orders"}, changed, "caches are told of the change and the delete")
			require.Equal(t, []string{"topic.create", "topic.update", "topic.delete"}, b.audited(t))
		})
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	valid := control.GroupSpec{Name: "billing", EndpointURL: "http://8.8.8.8/hook", Subscriptions: []models.Subscription{{Topic: "orders"}}}
	for _, tc := range []struct {
		name    string
		change  func(*control.GroupSpec)
		fields  []string
		blocked bool
	}{
		{"valid", func(*control.GroupSpec) {}, nil, false},
		{"bad name", func(s *control.GroupSpec) { s.Name = "Billing!" }, []string{"/name"}, false},
		{"no subscriptions", func(s *control.GroupSpec) { s.Subscriptions = nil }, []string{"/subscriptions"}, false},
		{"unknown topic", func(s *control.GroupSpec) { s.Subscriptions = []models.Subscription{{Topic: "nope"}} }, []string{"/subscriptions/0/topic"}, false},
		{"batch size zero", func(s *control.GroupSpec) { s.BatchSize = ptr(0) }, []string{"/batch_size"}, false},
		{"max throttles zero", func(s *control.GroupSpec) { s.MaxThrottles = ptr(0) }, []string{"/max_throttles"}, false},
		{"max throttles too many", func(s *control.GroupSpec) { s.MaxThrottles = ptr(1001) }, []string{"/max_throttles"}, false},
		{"loopback endpoint", func(s *control.GroupSpec) { s.EndpointURL = "http://127.0.0.1/hook" }, []string{"/endpoint_url"}, true},
		{"metadata endpoint", func(s *control.GroupSpec) { s.EndpointURL = "http://169.254.169.254/latest" }, []string{"/endpoint_url"}, true},
		{"not http", func(s *control.GroupSpec) { s.EndpointURL = "ftp://8.8.8.8/" }, []string{"/endpoint_url"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
			require.NoError(t, err)
			spec := valid
			tc.change(&spec)
			g, err := b.ctl.CreateGroup(b.ctx, b.actor, spec)
			if tc.fields != nil {
				requireFields(t, err, tc.fields...)
				require.Equal(t, tc.blocked, errors.Is(err, ssrf.ErrBlocked))
				require.Equal(t, []string{"topic.create"}, b.audited(t), "a refused group is not audited")
				// The same rule holds for a change of an existing group.
				_, err = b.ctl.CreateGroup(b.ctx, b.actor, valid)
				require.NoError(t, err)
				spec.Name = ""
				_, _, err = b.ctl.PatchGroupWith(b.ctx, b.actor, "billing", func(*models.Group) (control.GroupSpec, error) { return spec, nil })
				if tc.name != "bad name" {
					requireFields(t, err, tc.fields...)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, models.DefaultBatchSize, g.BatchSize, "defaults fill what the spec leaves out")
			require.Equal(t, models.ConsumeLatest, g.ConsumeFrom)
			require.NotEmpty(t, g.SigningSecret)
			_, err = b.ctl.CreateGroup(b.ctx, b.actor, spec)
			require.ErrorIs(t, err, models.ErrConflict)

			g2, _, err := b.ctl.PatchGroup(b.ctx, b.actor, "billing", control.GroupPatch{RateLimit: ptr(50)})
			require.NoError(t, err)
			require.Equal(t, 50, g2.RateLimit)
			require.Greater(t, g2.ConfigVersion, g.ConfigVersion)
			p, err := b.ctl.PauseGroup(b.ctx, b.actor, "billing")
			require.NoError(t, err)
			require.Equal(t, models.GroupPaused, p.Status)
			require.Equal(t, "paused by alice", p.PausedReason)
			_, err = b.ctl.ResumeGroup(b.ctx, b.actor, "billing")
			require.NoError(t, err)
			_, err = b.ctl.RotateSecret(b.ctx, b.actor, "billing", -1)
			requireFields(t, err, "/overlap_seconds")
			r, err := b.ctl.RotateSecret(b.ctx, b.actor, "billing", 60)
			require.NoError(t, err)
			require.NotEqual(t, g.SigningSecret, r.SigningSecret)
			_, err = b.ctl.ResetOffsets(b.ctx, b.actor, "billing", control.OffsetReset{To: "sideways"})
			requireFields(t, err, "/to")
			_, err = b.ctl.ResetOffsets(b.ctx, b.actor, "billing", control.OffsetReset{To: "timestamp", Timestamp: "yesterday"})
			requireFields(t, err, "/timestamp")
			_, err = b.ctl.ResetOffsets(b.ctx, b.actor, "billing", control.OffsetReset{To: "latest", Timestamp: "2026-11-29T14:00:00Z"})
			requireFields(t, err, "/timestamp")
			ps, err := b.ctl.ResetOffsets(b.ctx, b.actor, "billing", control.OffsetReset{To: "earliest"})
			require.NoError(t, err)
			require.Len(t, ps, 1)
			_, err = b.ctl.PauseGroup(b.ctx, b.actor, "nope")
			require.ErrorIs(t, err, models.ErrNotFound)
			require.Equal(t, []string{"topic.create", "group.create", "group.update", "group.paused", "group.running",
				"group.secret.rotate", "group.offsets.reset"}, b.audited(t))
		})
	}
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: "orders", Queues: ptr(1)})
	require.NoError(t, err)
	_, err = b.ctl.CreateGroup(b.ctx, b.actor, control.GroupSpec{Name: "billing", EndpointURL: "http://8.8.8.8/hook",
		Subscriptions: []models.Subscription{{Topic: "orders"}}})
	require.NoError(t, err)
	_, _, err = b.ctl.ListDeadLetters(b.ctx, "billing", "lost", control.PageRequest{Limit: 10})
	requireFields(t, err, "/state")
	_, page, err := b.ctl.ListDeadLetters(b.ctx, "billing", models.DeadLetterPending, control.PageRequest{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Empty(t, page.NextCursor)
	n, err := b.ctl.RedriveDeadLetters(b.ctx, b.actor, "billing", control.DeadLetterSelection{})
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = b.ctl.PurgeDeadLetters(b.ctx, b.actor, "nope", control.DeadLetterSelection{})
	require.ErrorIs(t, err, models.ErrNotFound)
	_, err = b.ctl.GetDeadLetter(b.ctx, "billing", 1)
	require.ErrorIs(t, err, models.ErrNotFound)
	require.Equal(t, []string{"topic.create", "group.create", "dead_letters.redrive"}, b.audited(t))
}

func TestPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, name := range []string{"a", "b", "c"} {
		_, err := b.ctl.CreateTopic(b.ctx, b.actor, control.TopicSpec{Name: name, Queues: ptr(1)})
		require.NoError(t, err)
	}
	var names []string
	p := control.PageRequest{Limit: 2}
	for {
		page, err := b.ctl.ListTopics(b.ctx, p)
		require.NoError(t, err)
		for _, topic := range page.Items {
			names = append(names, topic.Name)
		}
		if page.NextCursor == "" {
			break
		}
		p, err = control.ParsePage("2", page.NextCursor)
		require.NoError(t, err)
	}
	require.Equal(t, []string{"a", "b", "c"}, names)
}

func TestParsePage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit, cursor string
		want          control.PageRequest
		fields        []string
	}{
		{"", "", control.PageRequest{Limit: control.DefaultLimit}, nil},
		{"1", "", control.PageRequest{Limit: 1}, nil},
		{"500", control.EncodeCursor(42), control.PageRequest{Limit: 500, After: 42}, nil},
		{"0", "", control.PageRequest{}, []string{"/limit"}},
		{"501", "", control.PageRequest{}, []string{"/limit"}},
		{"ten", "", control.PageRequest{}, []string{"/limit"}},
		{"", "not-a-cursor!", control.PageRequest{}, []string{"/cursor"}},
		{"0", "%%", control.PageRequest{}, []string{"/limit", "/cursor"}},
	} {
		got, err := control.ParsePage(tc.limit, tc.cursor)
		if tc.fields != nil {
			requireFields(t, err, tc.fields...)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

func TestParseID(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "0", "-1", "abc", "1e3"} {
		_, err := control.ParseID(raw, "user")
		require.ErrorIs(t, err, models.ErrNotFound, raw)
	}
	id, err := control.ParseID("17", "user")
	require.NoError(t, err)
	require.Equal(t, int64(17), id)
}

func TestSessions(t *testing.T) {
	t.Parallel()
	_, st := heraldtest.Database(t)
	ctl := newControl(t, control.Config{Store: st, JWTSecret: "0123456789abcdef0123456789abcdef", BcryptCost: bcrypt.MinCost})
	ctx := context.Background()
	u, err := ctl.CreateUser(ctx, control.System, control.UserSpec{Username: "carol", Password: "correct horse"})
	require.NoError(t, err)
	tok, _, err := ctl.IssueToken(u)
	require.NoError(t, err)
	got, err := ctl.Authenticate(ctx, tok)
	require.NoError(t, err)
	require.Equal(t, u.ID, got.ID)
	other := newControl(t, control.Config{Store: st, JWTSecret: "another secret, another signature"})
	_, err = other.Authenticate(ctx, tok)
	require.ErrorIs(t, err, models.ErrUnauthorized)
	require.NoError(t, ctl.RevokeTokens(ctx, control.System, u.ID))
	_, err = ctl.Authenticate(ctx, tok)
	require.ErrorIs(t, err, models.ErrUnauthorized, "a revoked token no longer signs in")
}

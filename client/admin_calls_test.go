package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/heraldtest"
)

// TestMessageAndGroupActionCalls: publishing, browsing and getting a message, the
// attempt log, cursors, resends, a test delivery, a secret rotation and the
// errors of the blocked-queue and dead-letter calls, against a real Herald.
func TestMessageAndGroupActionCalls(t *testing.T) {
	t.Parallel()
	h, c := admin(t)
	ctx := context.Background()
	_, err := c.CreateTopic(ctx, client.TopicSpec{Name: "orders", Queues: 1})
	require.NoError(t, err)
	recv := heraldtest.NewReceiver(t)
	g, err := c.CreateGroup(ctx, client.GroupSpec{Name: "billing", GroupSettings: client.GroupSettings{
		EndpointURL: recv.URL, Subscriptions: []client.Subscription{{Topic: "orders"}}, ConsumeFrom: "earliest"}})
	require.NoError(t, err)
	recv.SetSecret(g.SigningSecret)
	k, err := c.CreateAPIKey(ctx, "ci", []string{"orders"})
	require.NoError(t, err)
	pub := client.New(h.BaseURL, client.WithAPIKey(k.Key))
	ps, err := pub.Publish(ctx, "orders", []client.Message{{Body: []byte(`{"n":1}`), Key: "c-1", Tag: "created"}})
	require.NoError(t, err)
	id := ps[0].ID
	recv.WaitCount(1, 15*time.Second)

	page, err := c.ListMessages(ctx, "orders", client.MessageQuery{Key: "c-1"}, client.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, id, page.Items[0].ID)
	_, err = c.ListMessages(ctx, "orders", client.MessageQuery{From: "yesterday"}, client.ListOptions{})
	require.ErrorIs(t, err, client.ErrInvalid)
	require.Eventually(t, func() bool {
		m, err := c.GetMessage(ctx, id)
		require.NoError(t, err)
		return len(m.DeliveryAttempts) == 1 && m.DeliveryAttempts[0].Group == "billing"
	}, 15*time.Second, 50*time.Millisecond)
	unsent := "bat_" + strings.Repeat("a", 26)
	_, err = c.GetMessage(ctx, unsent)
	require.ErrorIs(t, err, client.ErrNotFound, "a batch id is GetBatch's")
	_, err = c.GetBatch(ctx, unsent)
	require.ErrorIs(t, err, client.ErrNotFound)
	_, err = c.GetBatch(ctx, "bat_0000")
	require.ErrorIs(t, err, client.ErrInvalid)
	as, err := c.ListAttempts(ctx, "billing", client.AttemptQuery{StatusClass: "2xx"}, client.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, id, as.Items[0].MessageID)
	_, err = c.ListAttempts(ctx, "billing", client.AttemptQuery{ErrorClass: "nope"}, client.ListOptions{})
	require.ErrorIs(t, err, client.ErrInvalid)
	cs, err := c.GroupOffsets(ctx, "billing")
	require.NoError(t, err)
	require.Len(t, cs, 1)

	r, err := c.ResendMessage(ctx, "billing", id)
	require.NoError(t, err)
	require.Equal(t, 1, r.Queued)
	require.Eventually(t, func() bool { return len(recv.Get(id)) == 2 }, 15*time.Second, 10*time.Millisecond)
	from := time.Now().Add(-time.Hour)
	r, err = c.ResendMessages(ctx, "billing", client.ResendRange{FromTime: &from, ToTime: new(time.Time)})
	require.ErrorIs(t, err, client.ErrInvalid, "an empty time range: %+v", r)

	tr, err := c.TestGroup(ctx, "billing", json.RawMessage(`{"ping":1}`))
	require.NoError(t, err)
	require.True(t, tr.OK)
	require.True(t, strings.HasPrefix(tr.WebhookID, "msg_test_"))
	rot, err := c.RotateGroupSecret(ctx, "billing", time.Hour)
	require.NoError(t, err)
	require.NotEqual(t, g.SigningSecret, rot.SigningSecret)
	require.NotNil(t, rot.PreviousSecretExpiresAt)

	_, err = c.SkipBlockedQueue(ctx, "billing", cs[0].Queue)
	require.ErrorIs(t, err, client.ErrNotFound, "nothing is blocked")
	_, err = c.ResumeBlockedQueue(ctx, "nope", 1)
	require.ErrorIs(t, err, client.ErrNotFound)
	_, err = c.GetDeadLetter(ctx, "billing", 1)
	require.ErrorIs(t, err, client.ErrNotFound)
}

// TestUserAuditPushKeyAndProbeCalls: users, the audit log, push keys, the probes
// and the OpenAPI document, against a real Herald.
func TestUserAuditPushKeyAndProbeCalls(t *testing.T) {
	t.Parallel()
	h, c := admin(t)
	ctx := context.Background()
	u, err := c.CreateUser(ctx, client.UserSpec{Username: "vera", Password: "long-enough-pw"})
	require.NoError(t, err)
	require.Equal(t, "viewer", u.Role)
	_, err = c.CreateUser(ctx, client.UserSpec{Username: "vera", Password: "long-enough-pw"})
	require.ErrorIs(t, err, client.ErrConflict)
	op := "operator"
	u, err = c.PatchUser(ctx, u.ID, client.UserPatch{Role: &op})
	require.NoError(t, err)
	require.Equal(t, "operator", u.Role)
	vera := client.New(h.BaseURL)
	_, err = vera.Login(ctx, "vera", "long-enough-pw")
	require.NoError(t, err)
	_, err = vera.ListUsers(ctx, client.ListOptions{})
	require.ErrorIs(t, err, client.ErrForbidden)
	require.NoError(t, c.RevokeUserTokens(ctx, u.ID))
	_, err = vera.ListTopics(ctx, client.ListOptions{})
	require.ErrorIs(t, err, client.ErrUnauthorized)
	require.NoError(t, c.DeleteUser(ctx, u.ID))
	require.ErrorIs(t, c.DeleteUser(ctx, u.ID), client.ErrNotFound)
	us, err := c.ListUsers(ctx, client.ListOptions{})
	require.NoError(t, err)
	require.Len(t, us.Items, 1)

	audit, err := c.ListAudit(ctx, client.AuditQuery{Action: "user."}, client.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Len(t, audit.Items, 2)
	require.Equal(t, "user.delete", audit.Items[0].Action)
	require.NotEmpty(t, audit.NextCursor)

	before, err := c.PushKeys(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, before)
	rot, err := c.RotatePushKey(ctx)
	require.NoError(t, err)
	require.Equal(t, rot.KeyID, rot.Published[0])
	after, err := client.New(h.BaseURL).PushKeys(ctx)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1)

	require.NoError(t, client.New(h.BaseURL).Health(ctx))
	r, err := client.New(h.BaseURL).Ready(ctx)
	require.NoError(t, err)
	require.Equal(t, "ready", r.Status)
	doc, err := client.New(h.BaseURL).OpenAPI(ctx)
	require.NoError(t, err)
	require.Contains(t, string(doc), "/api/v1/audit-log")
	require.Error(t, client.New("http://127.0.0.1:1").Health(ctx))
}

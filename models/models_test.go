package models

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true}, {"orders.created", true}, {"0-a_b.c", true}, {strings.Repeat("a", 120), true},
		{"", false}, {".orders", false}, {"Orders", false}, {"a b", false}, {strings.Repeat("a", 121), false},
		{"ordérs", false}, {"a/b", false}, {"a;drop table", false},
	} {
		require.Equal(t, tc.ok, ValidName(tc.name), tc.name)
	}
	require.True(t, ReservedName("billing.dlq"))
	require.False(t, ReservedName("billing.dlqx"))
}

func TestValidLabel(t *testing.T) {
	t.Parallel()
	require.True(t, ValidLabel(""))
	require.True(t, ValidLabel("push"))
	require.True(t, ValidLabel("日本語 <script>"))
	require.True(t, ValidLabel(strings.Repeat("é", 127)))
	require.False(t, ValidLabel(strings.Repeat("é", 128)), "256 bytes")
	require.False(t, ValidLabel("a\nb"))
	require.False(t, ValidLabel("a\u0085b"), "C1 control")
	require.False(t, ValidLabel("\xff"))
}

func TestMessageID(t *testing.T) {
	t.Parallel()
	id := MessageID(12, 4832)
	require.Equal(t, "msg_12_4832", id)
	q, o, err := ParseMessageID(id)
	require.NoError(t, err)
	require.Equal(t, [2]int64{12, 4832}, [2]int64{q, o})
	for _, bad := range []string{"", "msg_", "msg_1", "msg_a_1", "bat_1_2", "msg_0_1", "msg_1_-2"} {
		_, _, err := ParseMessageID(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}

func TestIsBatchID(t *testing.T) {
	t.Parallel()
	require.True(t, IsBatchID("bat_mfrggzdfmztwq2lknnwg23tpob"))
	for _, bad := range []string{"", "bat_", "msg_1_2", "bat_mfrggzdfmztwq2lknnwg23tpo", "bat_mfrggzdfmztwq2lknnwg23tpobb", "bat_MFRGGZDFMZTWQ2LKNNWG23TPOB", "bat_mfrggzdfmztwq2lknnwg23tp0b"} {
		require.False(t, IsBatchID(bad), bad)
	}
}

func TestQueueTableName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "queue_000001", QueueTableName(1))
	require.Equal(t, "queue_1234567", QueueTableName(1234567))
}

func TestAPIKeyAllows(t *testing.T) {
	t.Parallel()
	k := APIKey{Topics: []string{"orders", "github.*"}}
	require.True(t, k.Allows("orders"))
	require.True(t, k.Allows("github.events"))
	require.False(t, k.Allows("orders.created"))
	require.False(t, k.Allows("github.events.dlq"), "patterns never match dead-letter topics")
	require.False(t, (&APIKey{Topics: []string{"*"}}).Allows("x.dlq"))
	require.True(t, ValidTopicPattern("orders.*"))
	require.False(t, ValidTopicPattern("Orders"))
	require.False(t, ValidTopicPattern("[a"))
}

func TestGroupValidate(t *testing.T) {
	t.Parallel()
	g := Group{Name: "billing", EndpointURL: "https://example.com/hook", Subscriptions: []Subscription{{Topic: "orders"}}}
	g.ApplyDefaults()
	require.NoError(t, g.Validate())
	g.BatchSize, g.EndpointURL, g.ConsumeFrom = 0, "https://u:p@example.com", "soon"
	var v *ValidationError
	require.ErrorAs(t, g.Validate(), &v)
	var ptrs []string
	for _, e := range v.Errors {
		ptrs = append(ptrs, e.Pointer)
	}
	require.ElementsMatch(t, []string{"/batch_size", "/endpoint_url", "/consume_from"}, ptrs)
	require.True(t, Subscription{}.Matches("anything"))
	require.False(t, Subscription{Tags: []string{"a"}}.Matches("b"))
}

// TestDeliverAt: delay_seconds and deliver_at resolve to a due time, a past time
// is now, and each bad value names its field.
func TestDeliverAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	i64 := func(n int64) *int64 { return &n }
	str := func(s string) *string { return &s }
	at, ok, _, _ := DeliverAt(nil, nil, now)
	require.False(t, ok)
	require.True(t, at.IsZero())
	at, ok, _, _ = DeliverAt(i64(30), nil, now)
	require.True(t, ok)
	require.Equal(t, now.Add(30*time.Second), at)
	at, ok, _, _ = DeliverAt(nil, str("2026-03-01T13:00:00.5+01:00"), now)
	require.True(t, ok)
	require.Equal(t, now.Add(500*time.Millisecond), at.UTC())
	at, ok, _, _ = DeliverAt(nil, str("2020-01-01T00:00:00Z"), now)
	require.True(t, ok)
	require.Equal(t, now, at, "a past time is now")
	for _, tc := range []struct {
		d     *int64
		s     *string
		field string
	}{
		{i64(0), nil, "/delay_seconds"}, {i64(31_536_001), nil, "/delay_seconds"},
		{nil, str("tomorrow"), "/deliver_at"}, {nil, str("2027-03-02T12:00:00Z"), "/deliver_at"},
		{i64(5), str("2026-03-01T12:00:05Z"), "/deliver_at"},
	} {
		_, ok, field, msg := DeliverAt(tc.d, tc.s, now)
		require.False(t, ok)
		require.Equal(t, tc.field, field)
		require.NotEmpty(t, msg)
	}
	id, err := ParseDelayedID(DelayedID(42))
	require.NoError(t, err)
	require.Equal(t, int64(42), id)
	for _, bad := range []string{"dly_", "dly_x", "dly_0", "msg_1_2", "42"} {
		_, err := ParseDelayedID(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}

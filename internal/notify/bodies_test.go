package notify

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/wire"
	"github.com/heraldhq/herald/models"
)

// TestRowsPayloadCarriesBodies: a flush whose messages fit MaxBodyBytesPerPayload
// reaches a dispatcher over Redis with every message whole (body bytes, content
// type, headers, trace id, plus the row's tag, key, time and ids), and one over the
// cap, or with a row missing its message, carries none, so workers load them.
func TestRowsPayloadCarriesBodies(t *testing.T) {
	msg := func(id int64, body []byte) Row {
		m := &models.Message{QueueID: 9, Offset: id, Tag: "push", Key: "k" + string(rune('a'+id)), Body: body, ContentType: "application/json",
			Headers: map[string]string{"x-a": "1"}, TraceID: "0af7651916cd43dd8448eb211c80319c", CreatedAt: 77}
		return Row{ID: id, Tag: m.Tag, Key: m.Key, CreatedAt: m.CreatedAt, Msg: m}
	}
	rows := []Row{msg(4, []byte(`{"n":1}`)), msg(5, []byte{0, 0xff, '"', '\n'})}
	got := Parse(encodeRows(Event{Queue: 9, Rows: rows}))
	require.Len(t, got.Rows, 2)
	for i, r := range got.Rows {
		require.NotNil(t, r.Msg, "row %d", i)
		require.Equal(t, *rows[i].Msg, *r.Msg, "row %d", i)
	}

	half := MaxBodyBytesPerPayload / 2
	fit := Parse(encodeRows(Event{Queue: 9, Rows: []Row{msg(1, bytes.Repeat([]byte("a"), half)), msg(2, bytes.Repeat([]byte("b"), half))}}))
	require.NotNil(t, fit.Rows[1].Msg, "bodies adding up to the cap are carried")
	over := encodeRows(Event{Queue: 9, Rows: []Row{msg(1, bytes.Repeat([]byte("a"), half)), msg(2, bytes.Repeat([]byte("b"), half+1))}})
	require.NotContains(t, payloadFields(t, over), "m", "bodies over the cap are not carried")
	for _, r := range Parse(over).Rows {
		require.Nil(t, r.Msg)
	}
	partial := encodeRows(Event{Queue: 9, Rows: []Row{msg(1, []byte("1")), {ID: 2, CreatedAt: 77}}})
	require.NotContains(t, payloadFields(t, partial), "m", "a row without its message: no bodies at all")

	short, err := wire.Marshal(map[string]any{"q": 5, "id": [][]int64{{1, 2}}, "c": []int64{1}, "m": []map[string][]byte{{"b": []byte("1")}}})
	require.NoError(t, err)
	bad := Parse(rowsPrefix + string(short))
	require.Len(t, bad.Rows, 2, "a body list of the wrong length leaves the rows")
	require.Nil(t, bad.Rows[0].Msg)
}

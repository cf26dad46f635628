package worker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

func msg(off int64, body string, ct string) models.Message {
	return models.Message{QueueID: 3, Offset: off, Body: []byte(body), ContentType: ct, Tag: "t<&>", Key: "k\"", CreatedAt: 1700000000123}
}

func TestSplitBatches(t *testing.T) {
	t.Parallel()
	ms := []models.Message{msg(1, "aaaa", "application/json"), msg(2, "bbbb", "application/json"), msg(3, "cc", "application/json"), msg(4, strings.Repeat("d", 20), "application/json")}
	sizes := func(bs [][]models.Message) []int {
		var out []int
		for _, b := range bs {
			out = append(out, len(b))
		}
		return out
	}
	require.Equal(t, []int{1, 1, 1, 1}, sizes(splitBatches(ms, 1, 1<<20)))
	require.Equal(t, []int{3, 1}, sizes(splitBatches(ms, 3, 1<<20)))
	require.Equal(t, []int{3, 1}, sizes(splitBatches(ms, 10, 10)), "4+4+2 bytes fit a 10-byte cap")
	require.Equal(t, []int{2, 1, 1}, sizes(splitBatches(ms, 10, 9)), "bytes cap; an oversized message goes alone")
}

// TestEnvelopeKeepsBodiesExact checks the batch envelope embeds JSON bodies byte for
// byte (no re-encoding, no HTML escaping) and others as base64.
func TestEnvelopeKeepsBodiesExact(t *testing.T) {
	t.Parallel()
	jsonBody := `{ "html": "<a href=\"x\">&amp;</a>", "n": 1.50 }`
	ms := []models.Message{msg(7, jsonBody, "application/json"), msg(8, "\x00\xffbin", "application/octet-stream"), msg(9, "not json", "application/json")}
	env := envelope("orders", func(int64) int { return 2 }, ms)
	require.Contains(t, string(env), `"body":`+jsonBody)
	var out struct {
		Messages []struct {
			ID          string          `json:"id"`
			Topic       string          `json:"topic"`
			Queue       int64           `json:"queue"`
			Offset      int64           `json:"offset"`
			Tag         string          `json:"tag"`
			Key         string          `json:"key"`
			PublishedAt string          `json:"published_at"`
			Attempt     int             `json:"attempt"`
			Body        json.RawMessage `json:"body"`
			BodyBase64  []byte          `json:"body_base64"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(env, &out))
	require.Len(t, out.Messages, 3)
	m := out.Messages[0]
	require.Equal(t, "msg_3_7", m.ID)
	require.Equal(t, "orders", m.Topic)
	require.Equal(t, int64(7), m.Offset)
	require.Equal(t, "t<&>", m.Tag)
	require.Equal(t, `k"`, m.Key)
	require.Equal(t, "2023-11-14T22:13:20.123Z", m.PublishedAt)
	require.Equal(t, 2, m.Attempt)
	require.Equal(t, jsonBody, string(m.Body))
	require.Equal(t, []byte("\x00\xffbin"), out.Messages[1].BodyBase64)
	require.Equal(t, []byte("not json"), out.Messages[2].BodyBase64, "invalid JSON falls back to base64")
}

func TestBatchID(t *testing.T) {
	t.Parallel()
	a := []models.Message{msg(1, "", ""), msg(2, "", "")}
	id := batchID(5, a)
	require.Regexp(t, `^bat_[a-z2-7]{26}$`, id)
	require.Equal(t, id, batchID(5, a), "stable")
	require.NotEqual(t, id, batchID(6, a))
	require.NotEqual(t, id, batchID(5, a[:1]))
}

func TestSplitJob(t *testing.T) {
	msgs := []models.Message{msg(2, "a", ""), msg(4, "b", ""), msg(5, "c", ""), msg(6, "d", "")}
	offsets := []int64{2, 4, 5, 6}
	members := func(bs [][]models.Message) [][]int64 {
		var out [][]int64
		for _, b := range bs {
			out = append(out, offsetsOf(b))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		job  delivery.Job
		want [][]int64
	}{
		{"first delivery", delivery.Job{}, [][]int64{{2, 4, 5}, {6}}},
		{"retry without keys", delivery.Job{Retry: true}, [][]int64{{2, 4, 5}, {6}}},
		{"retry keeps failed POSTs apart", delivery.Job{Retry: true, BatchKeys: []int64{10, 20, 20, 20}}, [][]int64{{2}, {4, 5, 6}}},
		{"one failed POST", delivery.Job{Retry: true, BatchKeys: []int64{7, 7, 7, 7}}, [][]int64{{2, 4, 5}, {6}}},
		{"keys misaligned", delivery.Job{Retry: true, BatchKeys: []int64{1}}, [][]int64{{2, 4, 5}, {6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, members(splitJob(tc.job, offsets, msgs, 3, 1<<20)))
		})
	}
}

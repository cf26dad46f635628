package bus

import (
	"bytes"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/wire"
	"github.com/heraldhq/herald/models"
)

// TestPackRoundTrip: several jobs survive a pack whole (identity, fence fields,
// carried bodies), one job travels as a plain delivery job, and a malformed job in
// a pack is reported while the others still run.
func TestPackRoundTrip(t *testing.T) {
	jobs := []delivery.Job{
		{Group: 1, Queue: 2, Version: 3, Generation: 1, Owner: "d1", Offsets: []delivery.Range{{5, 6}}, Parallelism: 2, Attempt: 1,
			Messages: []models.Message{{QueueID: 2, Offset: 5, Body: []byte(`{"a":1}`)}, {QueueID: 2, Offset: 6, Body: []byte{0, 1}}}},
		{Group: 4, Queue: 5, Version: 6, Owner: "d1", Offsets: []delivery.Range{{9, 9}}, Parallelism: 1, Attempt: 3, Retry: true, Attempts: []int{3}, BatchKeys: []int64{7}},
	}
	var enc [][]byte
	for _, j := range jobs {
		b, err := EncodeJob(j)
		require.NoError(t, err)
		enc = append(enc, b)
	}
	task, err := NewDeliverPack(enc)
	require.NoError(t, err)
	require.Equal(t, TypeDeliverPack, task.Type())
	got, errs := ParseDeliverPack(task)
	require.Empty(t, errs)
	require.Equal(t, jobs, got)
	require.Equal(t, "pk:"+jobs[0].TaskID()+"+2", PackTaskID(jobs[0].TaskID(), 2))

	one, err := NewDeliverPack(enc[1:])
	require.NoError(t, err)
	require.Equal(t, TypeDeliver, one.Type(), "a lone job is a plain delivery job")
	j, err := ParseDeliver(one)
	require.NoError(t, err)
	require.Equal(t, jobs[1], j)
	require.Equal(t, jobs[1].TaskID(), PackTaskID(jobs[1].TaskID(), 1))

	noGroup, err := wire.Marshal(map[string]int{"g": 0})
	require.NoError(t, err)
	badPack, err := wire.Marshal(packPayload{Jobs: []wire.RawMessage{noGroup, enc[0]}})
	require.NoError(t, err)
	got, errs = ParseDeliverPack(asynq.NewTask(TypeDeliverPack, badPack))
	require.Len(t, errs, 1)
	require.Equal(t, jobs[:1], got)
	_, errs = ParseDeliverPack(asynq.NewTask(TypeDeliverPack, []byte(`{`)))
	require.Len(t, errs, 1)
	_, err = NewDeliverPack(nil)
	require.Error(t, err)
}

// TestPacksSplit: runs hold at most MaxPackJobs jobs and MaxPackBytes, keep the
// order, cover every job once, and a job over MaxPackBytes goes alone.
func TestPacksSplit(t *testing.T) {
	small := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = []byte("{}")
		}
		return out
	}
	require.Empty(t, Packs(nil))
	require.Equal(t, [][2]int{{0, 1}}, Packs(small(1)))
	require.Equal(t, [][2]int{{0, MaxPackJobs}, {MaxPackJobs, MaxPackJobs + 1}}, Packs(small(MaxPackJobs+1)))
	big := bytes.Repeat([]byte("x"), MaxPackBytes/2+1)
	require.Equal(t, [][2]int{{0, 2}, {2, 3}, {3, 4}}, Packs([][]byte{big, []byte("{}"), big, big}))
	huge := bytes.Repeat([]byte("x"), MaxPackBytes+1)
	require.Equal(t, [][2]int{{0, 1}, {1, 2}, {2, 3}}, Packs([][]byte{[]byte("{}"), huge, []byte("{}")}))
}

func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	j := delivery.Job{Group: 1, Queue: 2, Version: 3, Generation: 4, Owner: "d1", Offsets: []delivery.Range{{10, 20}, {25, 25}}, Parallelism: 2, Attempt: 1}
	require.Equal(t, "1:2:3:10-25:g4", j.TaskID())
	tk, err := NewDeliver(j)
	require.NoError(t, err)
	got, err := ParseDeliver(tk)
	require.NoError(t, err)
	require.Equal(t, j, got)
	j.Offsets = nil
	tk, _ = NewDeliver(j)
	_, err = ParseDeliver(tk)
	require.Error(t, err)
}

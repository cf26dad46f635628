package bus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/wire"
	"github.com/heraldhq/herald/models"
)

// TestPushRoundTrip: pushed jobs survive whole (identity, carried bodies), the
// timeout rounds up to whole ms with a floor of 1 s, and a malformed job is
// reported while the others still run.
func TestPushRoundTrip(t *testing.T) {
	t.Parallel()
	jobs := []delivery.Job{
		{Group: 1, Queue: 2, Version: 3, Generation: 1, Owner: "d1", Offsets: []delivery.Range{{5, 6}}, Parallelism: 2, Attempt: 1,
			Messages: []models.Message{{QueueID: 2, Offset: 5, Body: []byte(`{"a":1}`)}, {QueueID: 2, Offset: 6, Body: []byte{0, 1}}}},
		{Group: 4, Queue: 5, Version: 6, Owner: "d1", Offsets: []delivery.Range{{9, 9}}, Parallelism: 1, Attempt: 3, Retry: true, Attempts: []int{3}},
	}
	var enc [][]byte
	for _, j := range jobs {
		b, err := EncodeJob(j)
		require.NoError(t, err)
		enc = append(enc, b)
	}
	b, err := EncodePush(enc, 41*time.Second+300*time.Microsecond)
	require.NoError(t, err)
	got, timeout, errs := ParsePush(b)
	require.Empty(t, errs)
	require.Equal(t, jobs, got)
	require.Equal(t, 41*time.Second+time.Millisecond, timeout)

	noGroup, err := wire.Marshal(map[string]int{"g": 0})
	require.NoError(t, err)
	b, err = EncodePush([][]byte{enc[0], noGroup}, time.Millisecond)
	require.NoError(t, err)
	got, timeout, errs = ParsePush(b)
	require.Len(t, errs, 1)
	require.Equal(t, jobs[:1], got)
	require.Equal(t, time.Second, timeout)

	_, _, errs = ParsePush([]byte("{"))
	require.Len(t, errs, 1)
	_, err = EncodePush(nil, time.Second)
	require.Error(t, err)
}

// TestWorkerEntry pins the registry value's form and refuses malformed ones.
func TestWorkerEntry(t *testing.T) {
	t.Parallel()
	e := WorkerEntry{Concurrency: 64, Seq: 12}
	require.Equal(t, "64 12", e.String())
	got, err := ParseWorkerEntry(e.String())
	require.NoError(t, err)
	require.Equal(t, e, got)
	for _, bad := range []string{"", "64", "x 1", "1 x", "-1 2"} {
		_, err := ParseWorkerEntry(bad)
		require.Error(t, err, bad)
	}
}

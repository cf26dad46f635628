package dispatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

func TestEventGateOnePerMinuteWithCount(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dl := eventGateKey{1, models.EventDeadLetterCreated}
	var e opEvents
	steps := []struct {
		at    time.Duration
		key   eventGateKey
		n     int
		ok    bool
		count int
		since time.Duration // -1: zero time
	}{
		{0, dl, 3, true, 3, -1},
		{10 * time.Second, dl, 2, false, 0, 0},
		{59 * time.Second, dl, 1, false, 0, 0},
		{0, eventGateKey{2, models.EventDeadLetterCreated}, 1, true, 1, -1}, // other group
		{0, eventGateKey{1, models.EventEndpointThrottled}, 1, true, 1, -1}, // other type
		{60 * time.Second, dl, 4, true, 7, 0},
		{61 * time.Second, dl, 1, false, 0, 0},
		{3 * time.Minute, dl, 1, true, 2, 60 * time.Second},
	}
	for i, s := range steps {
		count, since, ok := e.pass(s.key, s.n, t0.Add(s.at))
		require.Equal(t, s.ok, ok, "step %d", i)
		if !ok {
			continue
		}
		require.Equal(t, s.count, count, "step %d", i)
		if s.since < 0 {
			require.True(t, since.IsZero(), "step %d", i)
		} else {
			require.Equal(t, t0.Add(s.since), since, "step %d", i)
		}
	}
}

package models

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseCron: five and six fields and descriptors parse; a bad expression, a
// TZ= prefix, one that never fires and an unknown zone are refused naming their
// field; ticks follow the zone across a daylight-saving change; missed ticks fold
// into the first tick after now.
func TestParseCron(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"0 9 * * 1-5", "*/10 * * * * *", "@hourly", "@every 90s", "0 0 29 2 *"} {
		_, err := ParseCron(ok, "UTC")
		require.NoError(t, err, ok)
	}
	for _, tc := range []struct{ expr, tz, pointer string }{
		{"every day", "UTC", "/cron"},
		{"61 * * * *", "UTC", "/cron"},
		{"TZ=UTC 0 9 * * *", "UTC", "/cron"},
		{"CRON_TZ=Europe/Paris 0 9 * * *", "UTC", "/cron"},
		{"0 0 30 2 *", "UTC", "/cron"},
		{"@every 0s", "UTC", "/cron"},
		{"@every 500ms", "UTC", "/cron"},
		{"@every -5s", "UTC", "/cron"},
		{"@every 1.5s", "UTC", "/cron"},
		{" @daily", "UTC", "/cron"},
		{"0 0 1 1 *" + strings.Repeat(" ", 300), "UTC", "/cron"},
		{"0 " + strings.Repeat("1,", 200) + "1 * * *", "UTC", "/cron"},
		{"0 9 * * *", "Mars/Olympus", "/timezone"},
		{"0 9 * * *", "Local", "/timezone"},
	} {
		_, err := ParseCron(tc.expr, tc.tz)
		var v *ValidationError
		require.True(t, errors.As(err, &v), "%s in %s: %v", tc.expr, tc.tz, err)
		require.Equal(t, tc.pointer, v.Errors[0].Pointer, "%s in %s", tc.expr, tc.tz)
	}

	// 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer (2026-03-29).
	c, err := ParseCron("0 9 * * *", "Europe/Paris")
	require.NoError(t, err)
	ticks := c.Upcoming(c.Next(time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)), 3)
	require.Equal(t, []time.Time{
		time.Date(2026, 3, 28, 8, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC),
	}, ticks)

	every, err := ParseCron("* * * * *", "UTC")
	require.NoError(t, err)
	tick := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	require.Equal(t, tick.Add(time.Minute), every.AfterFire(tick, tick.Add(20*time.Second)), "on time: the next tick")
	require.Equal(t, tick.Add(4*time.Minute), every.AfterFire(tick, tick.Add(3*time.Minute+5*time.Second)), "missed ticks fold: the first after now")
	require.Equal(t, tick.Add(time.Minute), every.AfterFire(tick, tick.Add(-time.Second)), "fired early: the tick after it")
}

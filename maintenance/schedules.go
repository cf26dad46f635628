package maintenance

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
)

// schedulesBatch is how many due schedules one pass fires at most; a pass that
// fired a full batch runs again at once.
const schedulesBatch = 100

// fireSchedules publishes the tick of every schedule due at now (store.ScheduleFire:
// a compare-and-set of its next tick and its message parked, due at the tick, in
// one transaction, so a tick another process fired is skipped) and returns the
// earliest next tick of any active schedule (zero: none), and whether a full batch
// was due, so more may be.
func (m *Maintainer) fireSchedules(ctx context.Context, now time.Time) (next time.Time, again bool) {
	due, err := m.st.SchedulesDue(ctx, now, schedulesBatch)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("read due schedules", "err", err)
		}
		return now.Add(delayedRetry), false
	}
	for i := range due {
		sc := &due[i]
		c, err := models.ParseCron(sc.Cron, sc.Timezone)
		if err != nil {
			m.log.Error("a stored schedule does not parse; it is not fired", "schedule", sc.Name, "err", err)
			continue
		}
		after := c.AfterFire(sc.NextRun, now)
		if after.IsZero() {
			after = now.Add(models.MaxDelay) // no tick within five years: looked at again in a year
		}
		if _, err := m.st.ScheduleFire(ctx, sc, after); err != nil && ctx.Err() == nil {
			m.log.Warn("fire a schedule; tried again at the next pass", "schedule", sc.Name, "err", err)
		}
	}
	if len(due) == schedulesBatch {
		return now, true
	}
	next, ok, err := m.st.ScheduleNext(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.log.Warn("read the next schedule tick", "err", err)
		}
		return now.Add(delayedRetry), false
	case !ok:
		return time.Time{}, false
	}
	return next, false
}

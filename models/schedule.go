package models

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a host without zoneinfo still resolves them

	"github.com/robfig/cron/v3"
)

// Schedule publishes one message to a topic on every tick of a cron expression, in
// a time zone (QStash schedules, RocketMQ timer messages). The maintenance leader
// fires it: at each tick it parks Message in delayed_messages, due at the tick, and
// moves NextRun on, in one transaction guarded by NextRun's old value, so a tick
// is published once however many processes try. A tick missed while no leader ran
// (Herald down) is published once when one runs again, with every other missed
// tick folded into it; ticks that fall while Paused are skipped. Runs counts the
// messages published; LastRun is the tick of the last one (zero: none yet).
// Message holds Body, ContentType, Headers, Tag and Key; its queue is chosen at
// each tick (Key's, or any writable one).
type Schedule struct {
	ID        int64
	Name      string
	TopicID   int64
	Topic     string // the topic's name, filled by reads
	Cron      string
	Timezone  string
	Message   Message
	Paused    bool
	NextRun   time.Time
	LastRun   time.Time
	Runs      int64
	CreatedBy string
	CreatedAt time.Time
}

// MaxCronBytes is the longest cron expression a schedule takes.
const MaxCronBytes = 255

// cronParser reads standard five-field expressions (minute hour day-of-month month
// day-of-week), six fields with a leading seconds field, and the descriptors
// @yearly, @monthly, @weekly, @daily, @hourly and @every <duration>.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron is a parsed cron expression in its time zone; Next gives its ticks.
type Cron struct {
	sched cron.Schedule
	loc   *time.Location
}

// ParseCron parses expr (see cronParser; robfig/cron v3) in time zone tz (an IANA
// name such as Europe/Paris; empty means UTC). It returns a *ValidationError
// naming /cron or /timezone for an expression that does not parse, is longer than
// MaxCronBytes or padded with spaces, carries its own TZ= prefix, asks @every for
// less than a second or a fraction of one, or never fires, and for an unknown
// zone.
func ParseCron(expr, tz string) (Cron, error) {
	var v ValidationError
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || strings.EqualFold(tz, "local") {
		v.Add("/timezone", "must be an IANA time zone such as UTC or Europe/Paris")
	}
	up := strings.ToUpper(expr)
	switch {
	case len(expr) > MaxCronBytes:
		v.Add("/cron", fmt.Sprintf("at most %d bytes", MaxCronBytes))
	case Padded(expr) || expr == "":
		v.Add("/cron", "must be a cron expression without leading or trailing spaces")
	case strings.HasPrefix(up, "TZ=") || strings.HasPrefix(up, "CRON_TZ="):
		v.Add("/cron", "give the time zone in timezone, not in the expression")
	}
	if every, ok := strings.CutPrefix(expr, "@every "); ok && v.Err() == nil {
		// robfig/cron rounds a shorter or fractional interval to whole seconds,
		// so it would not do what was written.
		if d, err := time.ParseDuration(every); err == nil && (d < time.Second || d%time.Second != 0) {
			v.Add("/cron", "@every takes whole seconds, at least 1s")
		}
	}
	if err := v.Err(); err != nil {
		return Cron{}, err
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		v.Add("/cron", "must be a cron expression such as \"0 9 * * *\" (minute hour day month weekday, an optional leading seconds field) or @hourly, @daily, @every 10m: "+err.Error())
	}
	if err := v.Err(); err != nil {
		return Cron{}, err
	}
	c := Cron{sched: s, loc: loc}
	if c.Next(time.Now()).IsZero() {
		v.Add("/cron", "this expression never fires")
		return Cron{}, v.Err()
	}
	return c, nil
}

// Next returns the first tick strictly after t, in UTC, or the zero time when
// there is none within five years.
func (c Cron) Next(t time.Time) time.Time {
	n := c.sched.Next(t.In(c.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// Upcoming returns the n ticks from first (a tick itself) on, first included.
func (c Cron) Upcoming(first time.Time, n int) []time.Time {
	var out []time.Time
	for t := first; len(out) < n && !t.IsZero(); t = c.Next(t) {
		out = append(out, t)
	}
	return out
}

// AfterFire returns a schedule's next tick once its tick has been published at
// now: the first tick after both, so ticks missed while no leader ran fold into
// the one just published.
func (c Cron) AfterFire(tick, now time.Time) time.Time {
	if now.After(tick) {
		return c.Next(now)
	}
	return c.Next(tick)
}

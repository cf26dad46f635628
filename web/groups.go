package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// recentPerTopic is how many of each subscribed topic's newest messages a group's
// page lists with their delivery state.
const recentPerTopic = 15

func (s *Console) consoleGroups(c echo.Context) error {
	return s.renderGroups(c, http.StatusOK, nil, nil, "")
}

func (s *Console) renderGroups(c echo.Context, status int, form, errs map[string]string, errLine string) error {
	ctx := c.Request().Context()
	gs, err := fetchPage(c, s.ctl.ListGroups)
	if err != nil {
		return err
	}
	lags, totals, err := s.ctl.GroupLags(ctx)
	if err != nil {
		return err
	}
	page := newListForm(groupRows(gs.Items, lags, totals), gs.NextCursor, form, errs)
	return s.render(c, status, "groups", "groups", "Consumer groups", page, "", errLine)
}

// parseSubscriptions reads the console's subscription text: a topic name alone on a
// line, then one tag per line starting with "- " (tags may hold any character but
// control characters, so lines are the only safe separator), and at most one
// attribute filter per topic on a line starting with "filter: " (a topic name
// never holds a colon, so the prefix cannot be a topic).
func parseSubscriptions(text string) []models.Subscription {
	var out []models.Subscription
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if tag, ok := strings.CutPrefix(line, "- "); ok && len(out) > 0 {
			out[len(out)-1].Tags = append(out[len(out)-1].Tags, tag)
			continue
		}
		if filter, ok := strings.CutPrefix(strings.TrimSpace(line), "filter: "); ok && len(out) > 0 {
			out[len(out)-1].Filter = strings.TrimSpace(filter)
			continue
		}
		if t := strings.TrimSpace(line); t != "" {
			out = append(out, models.Subscription{Topic: t, Tags: []string{}})
		}
	}
	return out
}

// formatSubscriptions writes subscriptions in the format parseSubscriptions reads.
func formatSubscriptions(subs []control.SubscriptionSetting) string {
	var b strings.Builder
	for _, sub := range subs {
		b.WriteString(sub.Topic + "\n")
		for _, t := range sub.Tags {
			b.WriteString("- " + t + "\n")
		}
		if sub.Filter != "" {
			b.WriteString("filter: " + sub.Filter + "\n")
		}
	}
	return b.String()
}

func (s *Console) consoleGroupCreate(c echo.Context) error {
	form := map[string]string{"name": c.FormValue("name"), "endpoint_url": c.FormValue("endpoint_url"),
		"consume_from": c.FormValue("consume_from"), "subscriptions": c.FormValue("subscriptions"),
		"ordering": c.FormValue("ordering"), "ordered_on_exhausted": c.FormValue("ordered_on_exhausted")}
	if form["ordering"] == "" {
		form["ordering"] = orderingNone
	}
	ordered, ordering, errs := orderingFields(form["ordering"])
	if errs != nil {
		return s.renderGroups(c, http.StatusUnprocessableEntity, form, errs, "")
	}
	spec := control.GroupSpec{Name: form["name"], EndpointURL: form["endpoint_url"], ConsumeFrom: form["consume_from"],
		Subscriptions: parseSubscriptions(form["subscriptions"]), Ordered: ordered}
	if ordering != nil {
		spec.Ordering = *ordering
		spec.OrderedOnExhausted = models.OnExhausted(form["ordered_on_exhausted"])
	}
	g, err := s.ctl.CreateGroup(c.Request().Context(), actorOf(c), spec)
	if err != nil {
		return rerender(err, func(fields map[string]string, line string) error {
			return s.renderGroups(c, http.StatusUnprocessableEntity, form, fields, line)
		})
	}
	return redirectWith(c, consolePath+"/groups/"+g.Name, "Group "+g.Name+" created. Reveal its signing secret below to configure the receiver.")
}

// recentMessage is one of a subscribed topic's newest messages with its delivery
// state for the group: delivered (the cursor passed it), filtered (its tag is not
// subscribed), blocked (the failing head of a blocked key or queue) or pending.
type recentMessage struct {
	ID, Topic, PublishedAt, Tag, Key, State string
	Queue, Offset                           int64
}

type groupPage struct {
	G groupView
	// NodesDown words each down db node holding the group's queues (nodesDownLines).
	NodesDown                 []string
	Secret                    string
	Cursors                   []cursorView
	Lag                       int64
	LagSeconds                float64
	Delivered, Failed         int64
	ThroughputChart, LagChart any
	Recent                    []recentMessage
	Form, Errors              map[string]string
	Test                      *control.TestSendResult
	Attempts                  []attemptView
	// AttemptFilter holds the attempt search's values as given, AttemptErrors its
	// invalid ones by parameter pointer, AttemptsNext the URL of older attempts.
	AttemptFilter               map[string]string
	AttemptErrors               map[string]string
	AttemptsNext                string
	StatusClasses, ErrorClasses []string
	Health                      control.GroupHealth
	// Blocked lists an ordered group's queues stopped on a failed head.
	Blocked []blockedView
	// BlockedKeys lists, ordered by key, the first keys stopped on a failed POST;
	// BlockedKeyCount counts them all.
	BlockedKeys     []blockedKeyView
	BlockedKeyCount int
}

// groupForm holds the settings form's values for g.
func groupForm(g *models.Group) map[string]string {
	d := control.SettingsOf(g)
	sched := make([]string, len(d.RetrySchedule))
	for i, v := range d.RetrySchedule {
		sched[i] = strconv.Itoa(v)
	}
	form := map[string]string{"endpoint_url": d.EndpointURL, "batch_size": strconv.Itoa(d.BatchSize),
		"batch_window_ms": strconv.Itoa(d.BatchWindowMS), "max_in_flight": strconv.Itoa(d.MaxInFlight),
		"rate_limit": strconv.Itoa(d.RateLimit), "timeout_ms": strconv.Itoa(d.TimeoutMS), "max_attempts": strconv.Itoa(d.MaxAttempts),
		"retry_schedule": strings.Join(sched, ", "), "ordering": orderingOf(d.Ordered, d.Ordering),
		"ordered_on_exhausted": string(d.OrderedOnExhausted), "subscriptions": formatSubscriptions(d.Subscriptions),
		"dead_letter_retention_hours": strconv.Itoa(d.DeadLetterRetentionHours), "max_throttles": strconv.Itoa(d.MaxThrottles)}
	endpointAuthForm(d, form)
	shown := url.Values{}
	for k, v := range form {
		shown.Set(k, v)
	}
	form[shownField] = shown.Encode()
	return form
}

func (s *Console) consoleGroup(c echo.Context) error {
	return s.renderGroup(c, http.StatusOK, groupPage{}, "", "")
}

// renderGroup fills the group page around extra (form values, errors, a test result
// or a revealed secret) and renders it.
func (s *Console) renderGroup(c echo.Context, status int, extra groupPage, notice, errLine string) error {
	d, err := s.ctl.GroupDetail(c.Request().Context(), c.Param("group"), 0, recentPerTopic)
	if err != nil {
		return err
	}
	g := d.Group
	page := extra
	page.G = groupViewOf(g)
	page.NodesDown = nodesDownLines(d.Unreachable)
	if page.Form == nil {
		page.Form = groupForm(g)
	}
	if page.Errors == nil {
		page.Errors = map[string]string{}
	}
	page.Cursors = cursorViews(d.Cursors, time.Now())
	for _, cur := range page.Cursors {
		page.Lag += cur.Lag
		page.LagSeconds = max(page.LagSeconds, cur.LagSeconds)
	}
	// The last hour, per minute: the rollups of stats_minutely (delivered, failed, and
	// the lag maintenance samples each minute).
	points := d.Series[max(len(d.Series)-61, 0):]
	times := make([]time.Time, len(points))
	lag := make([]float64, len(points))
	for i, p := range points {
		times[i], lag[i] = p.Minute, float64(p.Lag)
		page.Delivered += p.Delivered
		page.Failed += p.Failed
	}
	page.ThroughputChart = statsChart(points, false)
	page.LagChart = Chart(times, []Series{{Label: "lag", Colour: "orange", Values: lag}}, 600, 180)
	for _, m := range d.Recent {
		page.Recent = append(page.Recent, recentMessage{ID: models.MessageID(m.QueueID, m.Offset), Topic: m.Topic,
			PublishedAt: msTime(m.CreatedAt), Tag: m.Tag, Key: m.Key, State: m.State, Queue: m.QueueID, Offset: m.Offset})
	}
	page.Health = d.Health
	if err := s.groupAttempts(c, g, &page); err != nil {
		return err
	}
	page.Blocked = blockedViews(d.Blocked)
	page.BlockedKeys, page.BlockedKeyCount = blockedKeyViews(d.BlockedKeys), d.BlockedKeyCount
	badgeBlockedKeyHeads(page.Recent, d.BlockedKeys)
	return s.render(c, status, "group", "groups", "Group "+g.Name, page, notice, errLine)
}

// settingsFields are the settings form's inputs besides the endpoint-auth ones.
var settingsFields = []string{"endpoint_url", "batch_size", "batch_window_ms", "max_in_flight", "rate_limit", "timeout_ms",
	"max_attempts", "retry_schedule", "subscriptions", "ordering", "ordered_on_exhausted", "dead_letter_retention_hours", "max_throttles"}

// shownField is the settings form's hidden input holding the values the form showed
// (URL-encoded), so that a save changes only what the operator edited.
const shownField = "shown"

// consoleGroupSettings reads the settings form and changes the settings the operator
// edited: a field whose value is the one the form showed (shownField) is left out,
// so a save never resets a setting the form does not show and never undoes a change
// made elsewhere since the form was opened. Without shownField every shown field is
// saved. Invalid fields come back next to their inputs.
func (s *Console) consoleGroupSettings(c echo.Context) error {
	form := map[string]string{shownField: c.FormValue(shownField)}
	for _, k := range append(slices.Clone(settingsFields), endpointAuthFields...) {
		form[k] = c.FormValue(k)
	}
	shown, err := url.ParseQuery(form[shownField])
	if err != nil || form[shownField] == "" {
		shown = nil
	}
	edited := func(keys ...string) bool {
		for _, k := range keys {
			if shown == nil || !shown.Has(k) || normalizeField(form[k]) != normalizeField(shown.Get(k)) {
				return true
			}
		}
		return false
	}
	errs := map[string]string{}
	var p control.GroupPatch
	if edited("endpoint_url") {
		u := strings.TrimSpace(form["endpoint_url"])
		p.EndpointURL = &u
	}
	if edited("ordering") {
		applyOrderingForm(form["ordering"], &p, errs)
	}
	if edited("ordered_on_exhausted") {
		oe := models.OnExhausted(form["ordered_on_exhausted"])
		p.OrderedOnExhausted = &oe
	}
	if edited("subscriptions") {
		subs := parseSubscriptions(form["subscriptions"])
		p.Subscriptions = &subs
	}
	applyEndpointAuthForm(form, &p, edited, errs)
	for _, f := range []struct {
		name string
		dst  **int
	}{{"batch_size", &p.BatchSize}, {"batch_window_ms", &p.BatchWindowMS}, {"max_in_flight", &p.MaxInFlight},
		{"rate_limit", &p.RateLimit}, {"timeout_ms", &p.TimeoutMS}, {"max_attempts", &p.MaxAttempts},
		{"dead_letter_retention_hours", &p.DeadLetterRetentionHours}, {"max_throttles", &p.MaxThrottles}} {
		if !edited(f.name) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(form[f.name]))
		if err != nil {
			errs["/"+f.name] = "must be a whole number"
			continue
		}
		*f.dst = &n
	}
	if edited("retry_schedule") {
		var sched []int // none: the default schedule, as at create
		for _, f := range strings.Split(form["retry_schedule"], ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := strconv.Atoi(f)
			if err != nil {
				errs["/retry_schedule"] = "whole numbers of seconds, comma-separated"
				break
			}
			sched = append(sched, n)
		}
		p.RetrySchedule = &sched
	}
	if len(errs) > 0 {
		return s.renderGroup(c, http.StatusUnprocessableEntity, groupPage{Form: form, Errors: errs}, "", "Some settings are not valid; nothing was changed.")
	}
	p.KeepEndpointAuth = c.FormValue("keep_endpoint_auth") == "true"
	g, dropped, err := s.ctl.PatchGroup(c.Request().Context(), actorOf(c), c.Param("group"), p)
	if err != nil {
		return rerender(err, func(fields map[string]string, _ string) error {
			return s.renderGroup(c, http.StatusUnprocessableEntity, groupPage{Form: form, Errors: fields}, "", "Some settings are not valid; nothing was changed.")
		})
	}
	notice := fmt.Sprintf("Settings saved (config version %d); dispatchers and workers apply them within 2 s.", g.ConfigVersion)
	if len(dropped) > 0 {
		notice += " The endpoint moved to another host, so the stored " + strings.Join(dropped, ", ") + " were dropped: enter them again to send them there."
	}
	return redirectWith(c, consolePath+"/groups/"+g.Name, notice)
}

// normalizeField is a form value as compared with the shown one: browsers send
// textarea lines with CRLF, and surrounding space means nothing in any field.
func normalizeField(v string) string {
	return strings.TrimSpace(strings.ReplaceAll(v, "\r\n", "\n"))
}

func (s *Console) consoleGroupStatus(st models.GroupStatus) echo.HandlerFunc {
	return func(c echo.Context) error {
		action := s.ctl.ResumeGroup
		if st == models.GroupPaused {
			action = s.ctl.PauseGroup
		}
		g, err := action(c.Request().Context(), actorOf(c), c.Param("group"))
		if err != nil {
			return err
		}
		return redirectWith(c, consolePath+"/groups/"+g.Name, "Group "+g.Name+" is now "+string(st)+".")
	}
}

// consoleGroupDelete deletes the group; the form's purge box also removes its dead
// letters and attempt log at once.
func (s *Console) consoleGroupDelete(c echo.Context) error {
	name := c.Param("group")
	out, err := s.ctl.DeleteGroup(c.Request().Context(), actorOf(c), name, c.FormValue("purge") == "true")
	if err != nil {
		if status, _, _ := describe(err); status == http.StatusConflict {
			_, line, _ := formErrors(err)
			return s.renderGroup(c, http.StatusConflict, groupPage{}, "", line)
		}
		return err
	}
	notice := "Group " + name + " deleted."
	if !out.Purged {
		notice += " Its dead letters and attempt log are kept until " + fmtTime(out.PurgeAfter) + "."
	}
	return redirectWith(c, consolePath+"/groups", notice)
}

func (s *Console) consoleGroupReset(c echo.Context) error {
	req := control.OffsetReset{To: c.FormValue("to")}
	if req.To == "timestamp" {
		req.Timestamp = strings.TrimSpace(c.FormValue("timestamp"))
	}
	for _, f := range strings.Split(c.FormValue("queues"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		q, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return s.renderGroup(c, http.StatusUnprocessableEntity, groupPage{Errors: map[string]string{"/queues": "queue ids are whole numbers, comma-separated"}}, "", "")
		}
		req.Queues = append(req.Queues, q)
	}
	ps, err := s.ctl.ResetOffsets(c.Request().Context(), actorOf(c), c.Param("group"), req)
	if err != nil {
		return rerender(err, func(fields map[string]string, line string) error {
			return s.renderGroup(c, http.StatusUnprocessableEntity, groupPage{Errors: fields}, "", line)
		})
	}
	return redirectWith(c, consolePath+"/groups/"+c.Param("group"), fmt.Sprintf("Offsets of %d queues reset to %s.", len(ps), req.To))
}

func (s *Console) consoleGroupRotate(c echo.Context) error {
	overlap, err := strconv.Atoi(c.FormValue("overlap_seconds"))
	if err != nil {
		overlap = control.DefaultSecretOverlapSeconds
	}
	g, err := s.ctl.RotateSecret(c.Request().Context(), actorOf(c), c.Param("group"), overlap)
	if err != nil {
		return err
	}
	return s.renderGroup(c, http.StatusOK, groupPage{Secret: g.SigningSecret}, "Signing secret rotated; the new secret is shown once below.", "")
}

func (s *Console) consoleGroupSecret(c echo.Context) error {
	g, err := s.ctl.RevealSecret(c.Request().Context(), actorOf(c), c.Param("group"))
	if err != nil {
		return err
	}
	return s.renderGroup(c, http.StatusOK, groupPage{Secret: g.SigningSecret}, "", "")
}

func (s *Console) consoleGroupTest(c echo.Context) error {
	res, err := s.ctl.TestSend(c.Request().Context(), actorOf(c), c.Param("group"), nil)
	if err != nil {
		return err
	}
	return s.renderGroup(c, http.StatusOK, groupPage{Test: res}, "", "")
}

package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// scheduleView is a schedule as the console lists it: its next three run times
// (none while paused), its last run ("" before the first) and its message's
// body as text.
type scheduleView struct {
	Name, Topic, Cron, Timezone string
	Paused                      bool
	NextRuns                    []string
	LastRun                     string
	Runs                        int64
	Tag, Key, ContentType, Body string
}

func scheduleViewOf(sc *models.Schedule) scheduleView {
	v := scheduleView{Name: sc.Name, Topic: sc.Topic, Cron: sc.Cron, Timezone: sc.Timezone, Paused: sc.Paused, Runs: sc.Runs,
		Tag: sc.Message.Tag, Key: sc.Message.Key, ContentType: sc.Message.ContentType, Body: string(sc.Message.Body)}
	for _, t := range control.ScheduleUpcoming(sc, 3) {
		v.NextRuns = append(v.NextRuns, fmtTime(t))
	}
	if !sc.LastRun.IsZero() {
		v.LastRun = fmtTime(sc.LastRun)
	}
	return v
}

type schedulesPage struct {
	Items  []scheduleView
	Topics []string
	Next   string
	Form   map[string]string
	Errors map[string]string
}

func (s *Console) consoleSchedules(c echo.Context) error {
	return s.renderSchedules(c, http.StatusOK, schedulesPage{}, "")
}

func (s *Console) renderSchedules(c echo.Context, status int, page schedulesPage, errLine string) error {
	ss, err := fetchPage(c, s.ctl.ListSchedules)
	if err != nil {
		return err
	}
	page.Items, page.Next = control.Map(ss, scheduleViewOf).Items, ss.NextCursor
	ts, err := s.ctl.ListTopics(c.Request().Context(), control.PageRequest{Limit: control.MaxLimit})
	if err != nil {
		return err
	}
	for _, t := range ts.Items {
		if !models.ReservedName(t.Name) {
			page.Topics = append(page.Topics, t.Name)
		}
	}
	if page.Form == nil {
		page.Form = map[string]string{"timezone": "UTC"}
	}
	if page.Errors == nil {
		page.Errors = map[string]string{}
	}
	return s.render(c, status, "schedules", "schedules", "Schedules", page, "", errLine)
}

func (s *Console) consoleScheduleCreate(c echo.Context) error {
	form := map[string]string{}
	for _, f := range []string{"name", "topic", "cron", "timezone", "body", "content_type", "tag", "key"} {
		form[f] = c.FormValue(f)
	}
	msg := models.Message{Body: []byte(form["body"]), ContentType: strings.TrimSpace(form["content_type"]), Tag: form["tag"], Key: form["key"]}
	if msg.ContentType == "" && !json.Valid(msg.Body) {
		msg.ContentType = "text/plain; charset=utf-8"
	}
	sc, err := s.ctl.CreateSchedule(c.Request().Context(), actorOf(c), control.ScheduleSpec{Name: strings.TrimSpace(form["name"]), Topic: form["topic"],
		Cron: strings.TrimSpace(form["cron"]), Timezone: strings.TrimSpace(form["timezone"]), Message: msg})
	if err != nil {
		return rerender(err, func(fields map[string]string, line string) error {
			if len(fields) > 0 {
				line = ""
			}
			return s.renderSchedules(c, http.StatusUnprocessableEntity, schedulesPage{Form: form, Errors: fields}, line)
		})
	}
	next := "paused"
	if v := scheduleViewOf(sc); len(v.NextRuns) > 0 {
		next = "first run " + v.NextRuns[0]
	}
	return redirectWith(c, consolePath+"/schedules", "Schedule "+sc.Name+" created; "+next+".")
}

// consoleScheduleAction pauses, resumes or deletes the schedule of the path.
func (s *Console) consoleScheduleAction(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, a, name := c.Request().Context(), actorOf(c), c.Param("schedule")
		var err error
		switch action {
		case "pause":
			_, err = s.ctl.PauseSchedule(ctx, a, name)
		case "resume":
			_, err = s.ctl.ResumeSchedule(ctx, a, name)
		default:
			err = s.ctl.DeleteSchedule(ctx, a, name)
		}
		if err != nil {
			return err
		}
		done := map[string]string{"pause": "paused", "resume": "resumed", "delete": "deleted"}[action]
		return redirectWith(c, consolePath+"/schedules", "Schedule "+name+" "+done+".")
	}
}

package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

type deadLettersPage struct {
	Group string
	// State is the filter's choice (a dead-letter state or all), States its options.
	State    string
	States   []string
	Groups   []string
	Items    []deadLetterView
	Detail   *deadLetterView
	NextURL  string
	Pending  int64
	Selected bool
}

// deadLetterStateAll is the dead-letter filter's choice that lists every state.
const deadLetterStateAll = "all"

// deadLetterStateChoices are the dead-letter filter's options: each state, then all.
func deadLetterStateChoices() []string {
	out := []string{}
	for _, st := range models.DeadLetterStates() {
		out = append(out, string(st))
	}
	return append(out, deadLetterStateAll)
}

// consoleDeadLetters shows one group's dead letters (?group=, ?state= one of
// deadLetterStateChoices, default pending; all lists every state) with checkboxes
// on the pending ones to redrive or purge, and one dead letter's attempts (?id=).
// Group names are offered from the first 500 groups.
func (s *Console) consoleDeadLetters(c echo.Context) error {
	ctx := c.Request().Context()
	page := deadLettersPage{Group: c.QueryParam("group"), State: c.QueryParam("state"), States: deadLetterStateChoices()}
	if page.State == "" {
		page.State = string(models.DeadLetterPending)
	}
	names, err := s.ctl.GroupNames(ctx, 500)
	if err != nil {
		return err
	}
	page.Groups = names
	if page.Group == "" {
		return s.render(c, http.StatusOK, "deadletters", "dead-letters", "Dead letters", page, "", "")
	}
	p, err := listPage(c)
	if err != nil {
		return err
	}
	// The count is read before the list: a dead letter written between the two
	// reads then shows in the list without being counted, never counted but missing.
	if page.Pending, err = s.ctl.PendingDeadLetters(ctx, page.Group); err != nil {
		return err
	}
	state := models.DeadLetterState(page.State)
	if page.State == deadLetterStateAll {
		state = "" // control lists every state
	}
	g, ds, err := s.ctl.ListDeadLetters(ctx, page.Group, state, p)
	if err != nil {
		return err
	}
	page.Selected = true
	page.Items = control.Map(ds, deadLetterViewOf).Items
	page.NextURL = nextURL(c, consolePath+"/dead-letters", ds.NextCursor)
	if raw := c.QueryParam("id"); raw != "" {
		id, _ := strconv.ParseInt(raw, 10, 64)
		d, err := s.ctl.GetDeadLetter(ctx, g.Name, id)
		if err != nil {
			return err
		}
		v := deadLetterViewOf(*d.Letter)
		v.Delivery = attemptViews(d.Attempts, map[int64]string{g.ID: g.Name})
		page.Detail = &v
	}
	return s.render(c, http.StatusOK, "deadletters", "dead-letters", "Dead letters of "+g.Name, page, "", "")
}

// deadLetterFormSelection reads the selected ids, or a from/to range (RFC 3339), from
// the dead-letter form; it refuses an empty selection so a click never acts on all.
func deadLetterFormSelection(c echo.Context) (control.DeadLetterSelection, error) {
	var sel control.DeadLetterSelection
	form, err := c.FormParams()
	if err != nil {
		return sel, failure(http.StatusBadRequest, err.Error())
	}
	for _, raw := range form["id"] {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return sel, failure(http.StatusUnprocessableEntity, "dead letter ids are numbers")
		}
		sel.IDs = append(sel.IDs, id)
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &sel.From}, {"to", &sel.To}} {
		if raw := strings.TrimSpace(c.FormValue(p.name)); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				return sel, failure(http.StatusUnprocessableEntity, p.name+" must be an RFC 3339 time such as 2026-11-29T14:00:00Z")
			}
			*p.dst = t
		}
	}
	if len(sel.IDs) == 0 && sel.From.IsZero() && sel.To.IsZero() {
		return sel, failure(http.StatusUnprocessableEntity, "select dead letters or give a time range")
	}
	return sel, nil
}

func (s *Console) consoleDeadLetterAction(redrive bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		g, err := s.ctl.GetGroup(ctx, c.Param("group"))
		if err != nil {
			return err
		}
		back := consolePath + "/dead-letters?group=" + url.QueryEscape(g.Name)
		sel, err := deadLetterFormSelection(c)
		if err != nil {
			_, _, detail := describe(err)
			return redirectWith(c, back, detail)
		}
		var n int64
		verb := "redriven"
		if redrive {
			n, err = s.ctl.RedriveDeadLetters(ctx, actorOf(c), g.Name, sel)
		} else {
			verb = "purged"
			n, err = s.ctl.PurgeDeadLetters(ctx, actorOf(c), g.Name, sel)
		}
		if err != nil {
			return err
		}
		return redirectWith(c, back, fmt.Sprintf("%d dead letters %s.", n, verb))
	}
}

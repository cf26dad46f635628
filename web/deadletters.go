package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

type deadLettersPage struct {
	Group    string
	State    string
	Groups   []string
	Items    []DeadLetterDTO
	Detail   *DeadLetterDTO
	NextURL  string
	Pending  int64
	Selected bool
}

// consoleDeadLetters shows one group's dead letters (?group=, ?state=, default
// pending) with checkboxes to redrive or purge, and one dead letter's attempts
// (?id=). Group names are offered from the first 500 groups.
func (s *Server) consoleDeadLetters(c echo.Context) error {
	ctx := c.Request().Context()
	page := deadLettersPage{Group: c.QueryParam("group"), State: c.QueryParam("state")}
	if page.State == "" {
		page.State = string(models.DeadLetterPending)
	}
	gs, err := s.st.GroupList(ctx, 0, 500)
	if err != nil {
		return err
	}
	for _, g := range gs {
		page.Groups = append(page.Groups, g.Name)
	}
	if page.Group == "" {
		return s.render(c, http.StatusOK, "deadletters", "dead-letters", "Dead letters", page, "", "")
	}
	g, err := s.st.GroupGetByName(ctx, page.Group)
	if err != nil {
		return err
	}
	page.Selected = true
	if page.Pending, err = s.st.DeadLetterCount(ctx, g.ID); err != nil {
		return err
	}
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	f := store.DeadLetterFilter{GroupID: g.ID, State: models.DeadLetterState(page.State)}
	if !validDeadLetterState(f.State) {
		return problem("validation", "state must be pending, redriven or purged")
	}
	ds, err := s.st.DeadLetterList(ctx, f, after, limit)
	if err != nil {
		return err
	}
	for _, d := range ds {
		page.Items = append(page.Items, deadLetterDTO(g, d))
	}
	if len(ds) > 0 {
		if next := nextCursor(ds[len(ds)-1].ID, len(ds), limit); next != "" {
			v := c.QueryParams()
			v.Set("cursor", next)
			page.NextURL = consolePath + "/dead-letters?" + v.Encode()
		}
	}
	if raw := c.QueryParam("id"); raw != "" {
		id, _ := strconv.ParseInt(raw, 10, 64)
		d, err := s.st.DeadLetterGet(ctx, g.ID, id)
		if err != nil {
			return err
		}
		as, err := s.st.AttemptsByMessage(ctx, d.QueueID, d.Offset)
		if err != nil {
			return err
		}
		var mine []models.DeliveryAttempt
		for _, a := range as {
			if a.GroupID == g.ID {
				mine = append(mine, a)
			}
		}
		dto := deadLetterDTO(g, *d)
		dto.Delivery = AttemptDTOs(mine)
		page.Detail = &dto
	}
	return s.render(c, http.StatusOK, "deadletters", "dead-letters", "Dead letters of "+g.Name, page, "", "")
}

// deadLetterFormFilter reads the selected ids, or a from/to range (RFC 3339), from
// the dead-letter form; it refuses an empty selection so a click never acts on all.
func deadLetterFormFilter(c echo.Context, g *models.Group) (store.DeadLetterFilter, error) {
	f := store.DeadLetterFilter{GroupID: g.ID}
	form, err := c.FormParams()
	if err != nil {
		return f, problem("malformed-request", err.Error())
	}
	for _, raw := range form["id"] {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return f, problem("validation", "dead letter ids are numbers")
		}
		f.IDs = append(f.IDs, id)
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if raw := strings.TrimSpace(c.FormValue(p.name)); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				return f, problem("validation", p.name+" must be an RFC 3339 time such as 2026-11-29T14:00:00Z")
			}
			*p.dst = t
		}
	}
	if len(f.IDs) == 0 && f.From.IsZero() && f.To.IsZero() {
		return f, problem("validation", "select dead letters or give a time range")
	}
	return f, nil
}

func (s *Server) consoleDeadLetterAction(redrive bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		g, err := s.st.GroupGetByName(ctx, c.Param("group"))
		if err != nil {
			return err
		}
		back := consolePath + "/dead-letters?group=" + url.QueryEscape(g.Name)
		f, err := deadLetterFormFilter(c, g)
		if err != nil {
			return redirectWith(c, back, fromError(err).Detail)
		}
		var n int64
		verb := "redriven"
		if redrive {
			n, err = s.st.DeadLetterRedrive(ctx, f)
			_ = s.notifier.Group(ctx, g.ID)
		} else {
			verb = "purged"
			n, err = s.st.DeadLetterPurge(ctx, f)
		}
		if err != nil {
			return err
		}
		s.audit(c, "dead_letters."+map[bool]string{true: "redrive", false: "purge"}[redrive], g.Name, nil, map[string]any{"count": n, "ids": f.IDs, "from": f.From, "to": f.To, "via": "console"})
		return redirectWith(c, back, fmt.Sprintf("%d dead letters %s.", n, verb))
	}
}

package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// nodeView is a db node as the console shows it: the DSN masked, never the
// password, and its health (up, down or unknown) with since when and, while down,
// the last error.
type nodeView struct {
	ID          int64
	Name        string
	DSN         string
	Weight      int
	State       string
	Queues      int
	CreatedAt   string
	Primary     bool
	Retired     bool
	Health      string
	HealthSince string
	HealthError string
}

func nodeViewOf(n *models.Node) nodeView {
	v := nodeView{ID: n.ID, Name: n.Name, DSN: n.DSNMasked, Weight: n.Weight, State: string(n.State), Queues: n.Queues,
		CreatedAt: fmtTime(n.CreatedAt), Primary: n.ID == models.PrimaryNodeID, Retired: n.State == models.NodeRetired,
		Health: string(n.Health.State), HealthError: n.Health.Error}
	if v.Health == "" {
		v.Health = string(models.NodeUnknown)
	}
	if !n.Health.Since.IsZero() {
		v.HealthSince = fmtTime(n.Health.Since)
	}
	return v
}

// nodesDownLines words each down db node for a page's warning: "Db node 3
// unreachable since <time>: <error>". The pages that span nodes show them above
// what they could read.
func nodesDownLines(hs []models.NodeHealth) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, fmt.Sprintf("Db node %d unreachable since %s: %s. What its queues hold is missing from this page.", h.Node, fmtTime(h.Since), h.Error))
	}
	return out
}

type nodesPage struct {
	Items []nodeView
	// Down words each node seen down (nodesDownLines).
	Down   []string
	Next   string
	Form   map[string]string
	Errors map[string]string
}

func (s *Console) consoleNodes(c echo.Context) error {
	return s.renderNodes(c, http.StatusOK, nodesPage{}, "", "")
}

func (s *Console) renderNodes(c echo.Context, status int, page nodesPage, notice, errLine string) error {
	ns, err := fetchPage(c, s.ctl.ListNodes)
	if err != nil {
		return err
	}
	page.Items, page.Next = control.Map(ns, nodeViewOf).Items, ns.NextCursor
	page.Down = nodesDownLines(s.ctl.NodesDown())
	if page.Form == nil {
		page.Form = map[string]string{}
	}
	if page.Errors == nil {
		page.Errors = map[string]string{}
	}
	return s.render(c, status, "nodes", "nodes", "Db nodes", page, notice, errLine)
}

// formWeight reads a weight field; an empty field is 0 (the default on create) and
// anything else that is not a number is a field error on /weight.
func formWeight(raw string) (int, *models.ValidationError) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return 0, nil
	}
	w, err := strconv.Atoi(raw)
	if err != nil {
		return 0, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/weight", Detail: "must be a whole number"}}}
	}
	return w, nil
}

func (s *Console) consoleNodeCreate(c echo.Context) error {
	form := map[string]string{"name": c.FormValue("name"), "weight": c.FormValue("weight")}
	fail := func(err error) error {
		return rerender(err, func(fields map[string]string, line string) error {
			if len(fields) > 0 {
				line = ""
			}
			return s.renderNodes(c, http.StatusUnprocessableEntity, nodesPage{Form: form, Errors: fields}, "", line)
		})
	}
	w, verr := formWeight(form["weight"])
	if verr != nil {
		return fail(verr)
	}
	n, err := s.ctl.CreateNode(c.Request().Context(), actorOf(c), control.NodeSpec{Name: form["name"], DSN: c.FormValue("dsn"), Weight: w})
	if err != nil {
		return fail(err)
	}
	return redirectWith(c, consolePath+"/nodes", "Node "+n.Name+" registered read-only.")
}

func (s *Console) consoleNodeWeight(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "node")
	if err != nil {
		return err
	}
	w, verr := formWeight(c.FormValue("weight"))
	if verr == nil && w == 0 {
		verr = &models.ValidationError{Errors: []models.FieldError{{Pointer: "/weight", Detail: "give a weight from 1 to 10000"}}}
	}
	if verr != nil {
		return s.renderNodes(c, http.StatusUnprocessableEntity, nodesPage{}, "", verr.Error())
	}
	n, err := s.ctl.PatchNode(c.Request().Context(), actorOf(c), id, control.NodePatch{Weight: &w})
	if err != nil {
		return rerender(err, func(_ map[string]string, line string) error {
			return s.renderNodes(c, http.StatusUnprocessableEntity, nodesPage{}, "", line)
		})
	}
	return redirectWith(c, consolePath+"/nodes", "Node "+n.Name+" now has weight "+strconv.Itoa(n.Weight)+".")
}

func (s *Console) consoleNodeRetire(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "node")
	if err != nil {
		return err
	}
	retired := models.NodeRetired
	n, err := s.ctl.PatchNode(c.Request().Context(), actorOf(c), id, control.NodePatch{State: &retired})
	if err != nil {
		return rerender(err, func(_ map[string]string, line string) error {
			return s.renderNodes(c, http.StatusConflict, nodesPage{}, "", line)
		})
	}
	return redirectWith(c, consolePath+"/nodes", "Node "+n.Name+" retired.")
}

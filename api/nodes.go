package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// NodeDTO is a db node as every read shows it: the DSN masked (user, address and
// database; never the password), its placement weight, state and how many queues it
// holds, and whether it answers: Health (up, down, or unknown while not probed yet
// and for a retired node), HealthSince (RFC 3339 UTC, when it entered Health; null
// when unknown) and HealthError (the last failure while down).
type NodeDTO struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	DSN         string  `json:"dsn"`
	Weight      int     `json:"weight"`
	State       string  `json:"state"`
	Queues      int     `json:"queues"`
	Health      string  `json:"health"`
	HealthSince *string `json:"health_since"`
	HealthError string  `json:"health_error"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

func nodeDTO(n *models.Node) NodeDTO {
	h := nodeHealthDTO(n.Health)
	return NodeDTO{ID: n.ID, Name: n.Name, DSN: n.DSNMasked, Weight: n.Weight, State: string(n.State), Queues: n.Queues,
		Health: h.State, HealthSince: h.Since, HealthError: h.Error,
		CreatedAt: n.CreatedAt.UTC().Format(control.TimeFormat), UpdatedAt: n.UpdatedAt.UTC().Format(control.TimeFormat)}
}

// nodeCreateRequest registers a node; weight defaults to 100 and state to read-only.
type nodeCreateRequest struct {
	Name   string           `json:"name"`
	DSN    string           `json:"dsn"`
	Weight int              `json:"weight"`
	State  models.NodeState `json:"state"`
}

// nodeUpdateRequest is a merge patch of a node; absent fields stay.
type nodeUpdateRequest struct {
	Name   *string           `json:"name"`
	DSN    *string           `json:"dsn"`
	Weight *int              `json:"weight"`
	State  *models.NodeState `json:"state"`
}

func (s *Server) nodeList(c echo.Context) error {
	return respondList(c, s.ctl.ListNodes, nodeDTO)
}

func (s *Server) nodeCreate(c echo.Context) error {
	var req nodeCreateRequest
	if err := bodyOf(c, 16<<10, &req); err != nil {
		return err
	}
	n, err := s.ctl.CreateNode(c.Request().Context(), actor(c), control.NodeSpec(req))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, nodeDTO(n))
}

func (s *Server) nodeGet(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "node")
	if err != nil {
		return err
	}
	n, err := s.ctl.GetNode(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, nodeDTO(n))
}

func (s *Server) nodeUpdate(c echo.Context) error {
	var req nodeUpdateRequest
	if err := bodyOf(c, 16<<10, &req); err != nil {
		return err
	}
	id, err := control.ParseID(c.Param("id"), "node")
	if err != nil {
		return err
	}
	n, err := s.ctl.PatchNode(c.Request().Context(), actor(c), id, control.NodePatch(req))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, nodeDTO(n))
}

// NodeDrainDTO answers a drain: the node (now draining) and the topics moved off it.
type NodeDrainDTO struct {
	Node        NodeDTO  `json:"node"`
	MovedTopics []string `json:"moved_topics"`
}

// nodeDrain sets a node draining and moves its topics off it (control.DrainNode):
// 202 when it moved topics (their old queues retire later), 200 when nothing live
// was on the node.
func (s *Server) nodeDrain(c echo.Context) error {
	id, err := control.ParseID(c.Param("id"), "node")
	if err != nil {
		return err
	}
	res, err := s.ctl.DrainNode(c.Request().Context(), actor(c), id)
	if err != nil {
		return err
	}
	status := http.StatusAccepted // moves are under way
	if len(res.Moved) == 0 {
		status = http.StatusOK // nothing live was on the node: only its state changed
	}
	return c.JSON(status, NodeDrainDTO{Node: nodeDTO(res.Node), MovedTopics: res.Moved})
}

package api

import (
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// NodeHealthDTO is a db node's reachability as the answering process sees it:
// Node (its id), State (up, down or unknown: not probed yet, or retired), Since
// (RFC 3339 UTC, when it entered State; null when unknown) and Error (the last
// failure while down, "" otherwise).
type NodeHealthDTO struct {
	Node  int64   `json:"node"`
	State string  `json:"state"`
	Since *string `json:"since"`
	Error string  `json:"error"`
}

func nodeHealthDTO(h models.NodeHealth) NodeHealthDTO {
	out := NodeHealthDTO{Node: h.Node, State: string(h.State), Error: h.Error}
	if out.State == "" {
		out.State = string(models.NodeUnknown)
	}
	if !h.Since.IsZero() {
		s := h.Since.UTC().Format(control.TimeFormat)
		out.Since = &s
	}
	return out
}

// nodeHealthDTOs converts hs, never answering null.
func nodeHealthDTOs(hs []models.NodeHealth) []NodeHealthDTO {
	out := make([]NodeHealthDTO, 0, len(hs))
	for _, h := range hs {
		out = append(out, nodeHealthDTO(h))
	}
	return out
}

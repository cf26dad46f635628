package maintenance

import (
	"context"

	"github.com/heraldhq/herald/models"
)

// watchNodes publishes node.down and node.up to models.EventsTopic for each change
// of a db node's health since the previous call (models.NodeTransitions over the
// store's probes, store.NodeHealthRun), on the leader only, so one process reports
// each transition once. A new leader starts from "every node up": a node already
// down when it takes over is reported down once more. An event that cannot be
// stored is tried again at the next call.
func (m *Maintainer) watchNodes(ctx context.Context) {
	if !m.Leader() {
		m.nodesSeen = nil
		return
	}
	cur := m.st.NodesHealth()
	for id, h := range cur {
		if h.State == models.NodeDown && !m.st.NodeIsDown(id) {
			delete(cur, id) // a stale mark: not a transition
		}
	}
	failed := map[int64]bool{}
	for _, tr := range models.NodeTransitions(m.nodesSeen, cur) {
		if err := m.publishNodeEvent(ctx, tr); err != nil {
			if ctx.Err() == nil {
				m.log.Warn("publish node event", "node", tr.Node, "to", tr.To, "err", err)
			}
			failed[tr.Node] = true // not remembered: the next call tries it again
		}
	}
	seen := map[int64]models.NodeHealth{} // retired nodes (absent from cur) are forgotten
	for id, h := range cur {
		if failed[id] || h.State == models.NodeUnknown {
			if p, ok := m.nodesSeen[id]; ok {
				seen[id] = p
			}
			continue
		}
		seen[id] = h
	}
	m.nodesSeen = seen
}

// eventTimeFormat is RFC 3339 UTC with milliseconds, as every time in Herald's JSON.
const eventTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// publishNodeEvent appends tr's event: data node (id), name, since (RFC 3339 UTC)
// and, for node.down, error.
func (m *Maintainer) publishNodeEvent(ctx context.Context, tr models.NodeTransition) error {
	typ := models.EventNodeUp
	data := map[string]any{"node": tr.Node, "since": tr.At.UTC().Format(eventTimeFormat)}
	if tr.To == models.NodeDown {
		typ = models.EventNodeDown
		data["error"] = tr.Error
	}
	name := ""
	if n, err := m.st.NodeGet(ctx, tr.Node); err == nil {
		name = n.Name
	}
	data["name"] = name
	q, err := m.st.EventAppend(ctx, models.Event{Type: typ, Data: data})
	if err != nil {
		return err
	}
	if err := m.notifier.Queues(ctx, []int64{q}); err != nil && ctx.Err() == nil {
		m.log.Warn("notify events queue", "err", err)
	}
	m.log.Info("db node "+string(tr.To), "node", tr.Node, "name", name, "since", tr.At, "err", tr.Error)
	return nil
}

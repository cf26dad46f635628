package maintenance

import "context"

// runMoves is the move duty: it seals every moved queue whose seal did not finish
// (the api that moved the topic stopped, or its seal timed out), and retires every
// sealed queue nothing is owed (store.QueueRetire: each group's cursor at the
// watermark with nothing listed, no retry row, no pending or unappended dead
// letter), deleting its cursors and dropping its table, then tells the groups. It
// runs with the outbox (every 5 s); with no move under way it costs one statement.
func (m *Maintainer) runMoves(ctx context.Context) {
	if !m.Leader() {
		return
	}
	moves, err := m.st.QueueMovesActive(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("read queue moves", "err", err)
		}
		return
	}
	for _, mv := range moves {
		node, err := m.st.QueueNode(ctx, mv.From)
		if err != nil {
			m.log.Warn("moved queue's node", "queue", mv.From, "err", err)
			continue
		}
		if !mv.Sealed() {
			if mv.Watermark, err = m.st.QueueSeal(ctx, mv, node); err != nil {
				m.log.Warn("seal moved queue", "queue", mv.From, "err", err)
				continue
			}
			if groups, err := m.st.TopicSubscriberIDs(ctx, mv.TopicID); err == nil {
				_ = m.notifier.Groups(ctx, groups)
			}
		}
		groups, ok, err := m.st.QueueRetire(ctx, mv, node)
		if err != nil {
			m.log.Warn("retire moved queue", "queue", mv.From, "err", err)
			continue
		}
		if ok {
			m.log.Info("moved queue retired", "queue", mv.From, "watermark", mv.Watermark, "groups", len(groups))
			if len(groups) > 0 {
				_ = m.notifier.Groups(ctx, groups)
			}
		}
	}
}

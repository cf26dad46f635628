package maintenance

import "strconv"

// noteRetentionSeries records that queue q of topic has retention series.
func (m *Maintainer) noteRetentionSeries(q int64, topic string) {
	if m.retentionSeries == nil {
		m.retentionSeries = map[int64]string{}
	}
	m.retentionSeries[q] = topic
}

// dropRetentionSeries deletes, after a retention pass over every queue, the series
// of queues no longer in topics (queue id → topic name: deleted topics, retired
// queues) and the per-topic series of topics left with no queue, so they go with
// their topic instead of staying at their last value.
func (m *Maintainer) dropRetentionSeries(topics map[int64]string) {
	live := make(map[string]bool, len(topics))
	for _, t := range topics {
		live[t] = true
	}
	for q, t := range m.retentionSeries {
		if topics[q] == t {
			continue
		}
		heldBack.DeleteLabelValues(t, strconv.FormatInt(q, 10))
		delete(m.retentionSeries, q)
		if !live[t] {
			pruned.DeleteLabelValues(t)
		}
	}
}

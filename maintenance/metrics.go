package maintenance

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/internal/metrics"
)

var (
	// heldBack is, per topic and queue, the stored messages past retention that a
	// lagging group has not consumed, so the consumed policy keeps them.
	heldBack = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_retention_held_back_messages",
		Help: "Messages past their topic's retention kept because a subscribed group has not consumed them, by topic and queue."}, []string{"topic", "queue"})
	// expired counts messages strict retention dropped before a group consumed them.
	expired = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_messages_expired_total",
		Help: "Messages dropped by strict retention before the group consumed them, by group."}, []string{"group"})
	// pruned counts messages retention deleted, by topic.
	pruned = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_retention_deleted_messages_total",
		Help: "Messages deleted by topic retention, by topic."}, []string{"topic"})
)

func init() { metrics.Registry.MustRegister(heldBack, expired, pruned) }

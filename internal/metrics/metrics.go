// Package metrics defines Herald's Prometheus collectors and serves them on their
// own listener. Label sets are bounded by topics and groups, never by messages.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldhq/herald/internal/stagetrace"
)

// Registry holds every Herald collector.
var Registry = prometheus.NewRegistry()

var (
	// Published counts messages stored, by topic.
	Published = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_published_messages_total", Help: "Messages stored by the api, by topic."}, []string{"topic"})
	// Delivered counts messages a subscriber accepted, by group.
	Delivered = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_delivered_messages_total", Help: "Messages delivered (2xx), by group."}, []string{"group"})
	// Failed counts messages whose POST failed, by group and error class (the
	// delivery-attempt classes; partial_failure for messages a 2xx {"failed":[…]} named).
	Failed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_failed_messages_total", Help: "Messages whose delivery attempt failed, by group and class."}, []string{"group", "class"})
	// PostLatency observes one POST's latency in seconds, by group.
	PostLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_post_duration_seconds", Help: "Latency of one POST to an endpoint.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"group"})
	// EndToEnd observes publish-to-2xx time in seconds, by group.
	EndToEnd = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_delivery_latency_seconds", Help: "Time from publish to a 2xx response.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 20)}, []string{"group"})
	// LagMessages is messages between a group's cursors and its queues' max offsets.
	LagMessages = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_group_lag_messages", Help: "Messages not yet done, by group."}, []string{"group"})
	// LagSeconds is the age of a group's oldest undone message.
	LagSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_group_lag_seconds", Help: "Age of the oldest undone message, by group."}, []string{"group"})
	// DBNodeUp is 1 while a db node answers a ping and 0 when it does not, by node
	// id, as last checked by the api's readiness probe.
	DBNodeUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_db_node_up", Help: "1 while the db node answers, 0 when it does not (checked by /readyz)."}, []string{"node"})
	// BreakerState is a group's circuit breaker: 0 closed, 1 half open (a probe is
	// out), 2 open.
	BreakerState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_group_breaker_state", Help: "Circuit breaker by group: 0 closed, 1 half open, 2 open."}, []string{"group"})
	// RetryMessages is the size of a group's retry topic, sampled by its owner at most
	// every few seconds with one grouped query.
	RetryMessages = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_group_retry_messages", Help: "Messages waiting in the group's retry topic."}, []string{"group"})
	// DeadLetters is a group's pending dead letters, sampled like RetryMessages.
	DeadLetters = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_group_dead_letters", Help: "Pending dead letters of the group."}, []string{"group"})
	// BlockedKeys is how many keys of a group ordered by key wait on a failed POST
	// (retrying in place or paused), set by its owner every commit; a count, not a
	// series per key (the keys are in the group's stats).
	BlockedKeys = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_group_blocked_keys", Help: "Keys of a group ordered by key waiting on a failed POST."}, []string{"group"})
	// JobsRedispatched counts delivery jobs re-enqueued under a new generation.
	JobsRedispatched = prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_jobs_redispatched_total", Help: "Delivery jobs re-dispatched after their deadline passed without reports."})
	// HolesClosed counts holes closed as rollbacks after gap_timeout.
	HolesClosed = prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_holes_closed_total", Help: "Holes taken as rolled-back inserts."})
	// LateRows counts rows found in a hole after it was closed as a rollback; any is an alert.
	LateRows = prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_late_rows_total", Help: "Rows committed after gap_timeout, delivered through the retry topic. Alert on any."})
	// CursorsBeyondMax counts cursors that stayed past their queue's max offset over
	// two polls 2 s apart (their queue was made read-only); any is an alert.
	CursorsBeyondMax = prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_cursors_beyond_max_total", Help: "Cursors past their queue's MAX(id) on two polls 2 s apart (restore or lagging replica); the queue was made read-only. Alert on any."})
)

func init() {
	Registry.MustRegister(DBNodeUp, Published, Delivered, Failed, PostLatency, EndToEnd, LagMessages, LagSeconds, BreakerState, RetryMessages, DeadLetters, BlockedKeys, JobsRedispatched, HolesClosed, LateRows, CursorsBeyondMax,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// ownerSeries are the per-group series a group's owning dispatcher exports.
var ownerSeries = []*prometheus.GaugeVec{LagMessages, LagSeconds, BreakerState, RetryMessages, DeadLetters, BlockedKeys}

// DeleteGroupOwnerSeries removes every per-group series a dispatcher exports for
// group (lag, breaker, retry and dead-letter sizes), once it no longer owns it, so
// only the new owner reports the group. Worker counters are left alone.
func DeleteGroupOwnerSeries(group string) {
	for _, v := range ownerSeries {
		v.DeleteLabelValues(group)
	}
}

// Serve runs the /metrics listener (and Go's /debug/pprof profiles) on addr until
// ctx ends. An empty addr disables it.
func Serve(ctx context.Context, addr string) error {
	if addr == "" {
		<-ctx.Done()
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(Registry, promhttp.HandlerOpts{}))
	// Profiles share the metrics listener: loopback by default, never the api's.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/stagetrace", stagetrace.Handler()) // 404 unless HERALD_STAGE_TRACE
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

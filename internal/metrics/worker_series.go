package metrics

import "github.com/prometheus/client_golang/prometheus"

// DeleteGroupWorkerSeries removes every per-group series workers export for group
// (delivered and failed messages, POST and end-to-end latencies), once the group is
// deleted, as DeleteGroupOwnerSeries does for the dispatcher's.
func DeleteGroupWorkerSeries(group string) {
	Delivered.DeleteLabelValues(group)
	PostLatency.DeleteLabelValues(group)
	EndToEnd.DeleteLabelValues(group)
	Failed.DeletePartialMatch(prometheus.Labels{"group": group})
}

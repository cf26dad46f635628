package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	// APIRequests counts requests the api answered (REST and console), by route
	// template as registered (e.g. `/api/v1/groups/:group`, never the raw path; `/*`
	// for a path no route serves), method (the common ones, else OTHER) and status
	// class (`2xx` … `5xx`).
	APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_api_requests_total",
		Help: "Requests answered by the api, by route template, method and status class."}, []string{"route", "method", "code"})
	// APIRequestDuration observes the time from routing to the last byte written, in
	// seconds, by route template and method (labels as APIRequests).
	APIRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "herald_api_request_duration_seconds",
		Help: "Time to answer a request, by route template and method.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"route", "method"})
)

func init() { Registry.MustRegister(APIRequests, APIRequestDuration) }

// ObserveAPIRequest records one answered request: route is the route template (the
// caller passes `/*` or another fixed string for unrouted paths, so labels stay
// bounded by the route table), status the HTTP status written and seconds its
// duration.
func ObserveAPIRequest(route, method string, status int, seconds float64) {
	m := apiMethod(method)
	APIRequests.WithLabelValues(route, m, StatusClass(status)).Inc()
	APIRequestDuration.WithLabelValues(route, m).Observe(seconds)
}

// StatusClass returns status's class label: "2xx" for 200–299 and so on; "other"
// outside 100–599.
func StatusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// apiMethod bounds the method label: a client may send any token as a method.
func apiMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "OTHER"
}

package delivery

// ErrorClass names why a POST failed. It is stored in delivery_attempts.error_class
// (ASCII, at most 32 bytes), shown by the API (DeliveryAttempt.error_class,
// TestSendResult.error_class) and labels herald_failed_messages_total, so a value
// never changes once released. The empty class means no failure.
type ErrorClass string

// Error classes. internal/webhook assigns all but ClassNoReport, which the dispatcher
// gives messages of a job that never reported.
const (
	// ClassDNS: the endpoint's host name did not resolve.
	ClassDNS ErrorClass = "dns"
	// ClassConnect: the TCP connection could not be made (refused, unreachable).
	ClassConnect ErrorClass = "connect"
	// ClassTLS: the TLS handshake failed (no TLS spoken, or a certificate not trusted for the host).
	ClassTLS ErrorClass = "tls"
	// ClassTimeout: no complete answer came within the group's timeout_ms, or the dial timed out.
	ClassTimeout ErrorClass = "timeout"
	// ClassReset: the connection was reset or broken while the POST was under way.
	ClassReset ErrorClass = "reset"
	// ClassRedirect: the endpoint answered 3xx; redirects are never followed.
	ClassRedirect ErrorClass = "redirect"
	// ClassBlocked: the SSRF guard refused the address dialled (internal/ssrf).
	ClassBlocked ErrorClass = "blocked_destination"
	// ClassHTTPStatus: any other non-2xx answer (4xx but 410 and 429, 5xx but 503 with Retry-After).
	ClassHTTPStatus ErrorClass = "http_status"
	// ClassPartialMalformed: a 2xx whose {"failed": …} is not a list of message ids; the batch failed.
	ClassPartialMalformed ErrorClass = "partial_malformed"
	// ClassPartialFailure: a message a 2xx {"failed":[…]} answer named; the excerpt holds that answer.
	ClassPartialFailure ErrorClass = "partial_failure"
	// ClassOther: a failure no other class names (the request could not be built or signed, an unknown transport error).
	ClassOther ErrorClass = "other"
	// ClassNoReport: the job ran out of generations without a report (dispatcher, config.Dispatcher.MaxGenerations).
	ClassNoReport ErrorClass = "no_report"
)

// ErrorClasses lists every ErrorClass.
func ErrorClasses() []ErrorClass {
	return []ErrorClass{ClassDNS, ClassConnect, ClassTLS, ClassTimeout, ClassReset, ClassRedirect, ClassBlocked,
		ClassHTTPStatus, ClassPartialMalformed, ClassPartialFailure, ClassOther, ClassNoReport}
}

// Reason says why a worker handed messages back without a result (Report.Returned,
// keyed by it on the wire between worker and dispatcher). Each names its cause, so
// the dispatcher can treat each cause as it needs (Backoff); values never change
// once released, as workers and dispatchers of two releases meet during an upgrade.
type Reason string

// Return reasons.
const (
	// ReasonShutdown: the worker stopped, or the job's context ended, before they were sent.
	ReasonShutdown Reason = "shutdown"
	// ReasonLoadFailed: the worker could not read the job's group or its messages from the store.
	ReasonLoadFailed Reason = "load_failed"
	// ReasonRecordFailed: their POST failed but the retry rows (or the ordered dead letter) could not be written.
	ReasonRecordFailed Reason = "record_failed"
	// ReasonPaused: the group was paused or disabled when the job ran.
	ReasonPaused Reason = "paused"
	// ReasonProbe: the job was the half-open breaker's probe, which sends only its first batch.
	ReasonProbe Reason = "probe"
	// ReasonThrottled: the endpoint answered 429, or 503 with Retry-After, to the POST that
	// carried these messages; each counts one throttle toward the group's limit (ThrottleLimit), and the job stopped.
	ReasonThrottled Reason = "throttled"
	// ReasonHeld: not sent because another POST of the job was throttled; the group's
	// pause holds them and no throttle is counted for them.
	ReasonHeld Reason = "held"
	// ReasonGone: the endpoint answered 410; the group is paused and the job stopped.
	ReasonGone Reason = "gone"
	// ReasonFenced: the job's cursor version is below the fence (an offset reset, a takeover or a deleted group); dropped, the cursor's new version owns them.
	ReasonFenced Reason = "fenced"
	// ReasonBlocked: an ordered job stopped at a failed POST; these later messages wait behind it.
	ReasonBlocked Reason = "blocked"
)

// Reasons lists every Reason.
func Reasons() []Reason {
	return []Reason{ReasonShutdown, ReasonLoadFailed, ReasonRecordFailed, ReasonPaused, ReasonProbe, ReasonThrottled,
		ReasonHeld, ReasonGone, ReasonFenced, ReasonBlocked}
}

// Backoff reports whether messages returned for r count a return and wait the
// dispatcher's growing return backoff (config.Dispatcher.ReturnBackoff, doubling per
// return, at most 30 s): the worker or its store failed them, and sending again at
// once could fail the same way. For the other reasons the group's state (pause,
// probe, throttle, 410), the fence or an ordered block holds them back, so no return
// is counted.
func (r Reason) Backoff() bool {
	switch r {
	case ReasonShutdown, ReasonLoadFailed, ReasonRecordFailed:
		return true
	}
	return false
}

package models

import "time"

// EventsTopic is the topic Herald publishes its operational events to. It is
// reserved: users cannot create it, API keys never match it (so /v1 refuses to
// publish to it), and any group may subscribe to it to get alerts by webhook.
const EventsTopic = "herald.events"

// EventType names an operational event; it is the message's tag in EventsTopic, so
// a subscription can filter on it. docs/events.md gives each one's JSON schema.
type EventType string

const (
	// EventGroupPaused: a group was paused, by an operator or by Herald (410 Gone).
	EventGroupPaused EventType = "group.paused"
	// EventGroupDisabled: a group was auto-paused after failing for disable_after.
	EventGroupDisabled EventType = "group.disabled"
	// EventGroupResumed: a paused or disabled group was resumed.
	EventGroupResumed EventType = "group.resumed"
	// EventBreakerOpened: a group's circuit breaker opened; deliveries wait for a probe.
	EventBreakerOpened EventType = "breaker.opened"
	// EventBreakerClosed: a probe succeeded and the breaker closed.
	EventBreakerClosed EventType = "breaker.closed"
	// EventDeadLetterCreated: messages of a group were dead-lettered; at most one
	// event per group per EventMinInterval, with the count since the previous one.
	EventDeadLetterCreated EventType = "dead_letter.created"
	// EventEndpointThrottled: a group's endpoint answered 429 or 503 with Retry-After;
	// at most one per group per EventMinInterval, with the count since the previous one.
	EventEndpointThrottled EventType = "endpoint.throttled"
	// EventNodeDown: a db node stopped answering (the maintenance leader's prober saw
	// it down); once per transition. Group is "" and Data names the node.
	EventNodeDown EventType = "node.down"
	// EventNodeUp: a db node that was down answers again; once per transition.
	EventNodeUp EventType = "node.up"
)

// EventTypes lists every EventType.
func EventTypes() []EventType {
	return []EventType{EventGroupPaused, EventGroupDisabled, EventGroupResumed, EventBreakerOpened,
		EventBreakerClosed, EventDeadLetterCreated, EventEndpointThrottled, EventNodeDown, EventNodeUp}
}

// EventMinInterval is the least time between two rate-limited events
// (dead_letter.created, endpoint.throttled) of one group: 1 min.
const EventMinInterval = time.Minute

// Event is one operational event as its message body carries it (JSON): Type, Time
// (RFC 3339 UTC, ms), Group (the group's name; "" for node events) and Data, whose
// fields depend on Type.
type Event struct {
	Type  EventType      `json:"type"`
	Time  time.Time      `json:"time"`
	Group string         `json:"group"`
	Data  map[string]any `json:"data"`
}

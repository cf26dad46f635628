package models

// RetentionPolicy says what a topic's retention does with messages a subscribed
// group has not consumed yet (PMQ's save_day_num, which deletes only consumed ids).
type RetentionPolicy string

const (
	// RetentionConsumed deletes a message older than the topic's retention only once
	// every subscribed group's committed cursor has passed it; messages a lagging
	// group holds back are reported, never dropped (the default).
	RetentionConsumed RetentionPolicy = "consumed"
	// RetentionStrict deletes messages older than the retention whatever the
	// cursors: a lagging group's cursor is moved past them and each dropped message
	// is counted for that group (herald_messages_expired_total{group}) and logged.
	RetentionStrict RetentionPolicy = "strict"
)

// RetentionPolicies lists every RetentionPolicy.
func RetentionPolicies() []RetentionPolicy {
	return []RetentionPolicy{RetentionConsumed, RetentionStrict}
}

// Retention defaults and bounds, in hours.
const (
	// DefaultRetentionHours is a topic's default retention: 168 h (7 days, PMQ's save_day_num).
	DefaultRetentionHours = 168
	// MaxRetentionHours caps a topic's retention: 8,760 h (365 days).
	MaxRetentionHours = 8760
	// DefaultDeadLetterRetentionHours is how long a group's dead letters are kept: 336 h (14 days).
	DefaultDeadLetterRetentionHours = 336
)

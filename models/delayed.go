package models

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxDelay is the longest a message may wait before delivery (delay_seconds up to
// 31,536,000, or a deliver_at at most this far ahead): one year, QStash's longest.
const MaxDelay = 365 * 24 * time.Hour

// DelayedMessage is a message published with a delay (SQS DelaySeconds, QStash's
// Upstash-Delay and Upstash-Not-Before, RocketMQ's timer messages): parked in the
// control database, outside the queue tables, until DeliverAt, when the
// maintenance leader moves it into its topic's queue (the key's, or a writable one)
// and it becomes an ordinary message with a queue offset. ID is its parked row;
// Message's QueueID and Offset are 0 while it waits.
type DelayedMessage struct {
	ID        int64
	TopicID   int64
	DeliverAt time.Time
	Message
}

// DelayedID formats the public id of parked message id: "dly_<id>".
func DelayedID(id int64) string { return "dly_" + strconv.FormatInt(id, 10) }

// IsDelayedID reports whether id has the shape of a DelayedID.
func IsDelayedID(id string) bool { return strings.HasPrefix(id, "dly_") }

// ParseDelayedID returns the parked row of "dly_<id>", or an error wrapping
// ErrInvalid for any other shape.
func ParseDelayedID(id string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "dly_"), 10, 64)
	if !IsDelayedID(id) || err != nil || n <= 0 {
		return 0, fmt.Errorf("delayed message id %q: %w", id, ErrInvalid)
	}
	return n, nil
}

// DeliverAt resolves a publish's delay_seconds (1 … MaxDelay in seconds) or
// deliver_at (RFC 3339; a time already past means now) against now. Both nil means
// no delay (ok false). It returns the field's JSON pointer suffix and a message
// for a bad value: both given, out of range, or not RFC 3339.
func DeliverAt(delaySeconds *int64, deliverAt *string, now time.Time) (at time.Time, ok bool, field, problem string) {
	switch {
	case delaySeconds != nil && deliverAt != nil:
		return time.Time{}, false, "/deliver_at", "give delay_seconds or deliver_at, not both"
	case delaySeconds != nil:
		if *delaySeconds < 1 || *delaySeconds > int64(MaxDelay/time.Second) {
			return time.Time{}, false, "/delay_seconds", "must be 1 to " + strconv.FormatInt(int64(MaxDelay/time.Second), 10) + " seconds"
		}
		return now.Add(time.Duration(*delaySeconds) * time.Second), true, "", ""
	case deliverAt != nil:
		t, err := time.Parse(time.RFC3339Nano, *deliverAt)
		if err != nil {
			return time.Time{}, false, "/deliver_at", "must be an RFC 3339 time such as 2026-01-02T15:04:05Z"
		}
		if t.After(now.Add(MaxDelay)) {
			return time.Time{}, false, "/deliver_at", "must be at most one year ahead"
		}
		if t.Before(now) {
			t = now
		}
		return t, true, "", ""
	}
	return time.Time{}, false, "", ""
}

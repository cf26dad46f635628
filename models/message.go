package models

import (
	"fmt"
	"strconv"
	"strings"
)

// Message is one published payload as stored in its queue table. Body holds the
// exact bytes published (for `body`, the JSON value's bytes; for `body_base64`,
// the decoded bytes). CreatedAt is Unix milliseconds.
type Message struct {
	QueueID     int64
	Offset      int64
	Tag         string
	Key         string
	Headers     map[string]string
	Body        []byte
	ContentType string
	TraceID     string
	CreatedAt   int64
	ProducerIP  string
}

// MessageID formats the public id of the message at offset in queue: "msg_<queue>_<offset>".
func MessageID(queue, offset int64) string {
	return "msg_" + strconv.FormatInt(queue, 10) + "_" + strconv.FormatInt(offset, 10)
}

// ParseMessageID splits "msg_<queue>_<offset>" into its numbers. It returns an
// error wrapping ErrInvalid for any other shape.
func ParseMessageID(id string) (queue, offset int64, err error) {
	rest, ok := strings.CutPrefix(id, "msg_")
	q, o, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 {
		return 0, 0, fmt.Errorf("message id %q: %w", id, ErrInvalid)
	}
	queue, err1 := strconv.ParseInt(q, 10, 64)
	offset, err2 := strconv.ParseInt(o, 10, 64)
	if err1 != nil || err2 != nil || queue <= 0 || offset <= 0 {
		return 0, 0, fmt.Errorf("message id %q: %w", id, ErrInvalid)
	}
	return queue, offset, nil
}

// IsBatchID reports whether id has the shape of a batch's webhook-id: `bat_` and 26
// lower-case base32 characters (of the SHA-256 of the group and member ids).
func IsBatchID(id string) bool {
	rest, ok := strings.CutPrefix(id, "bat_")
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// Headers Herald adds to a dead letter's copy on its group's dead-letter topic
// `<group>.dlq`, naming where it came from. Publishers cannot set herald-* headers,
// so a message carrying them came through a dead-letter topic. Workers forward them
// like publisher x-* headers (at batch size 1, as HTTP headers; in a batch envelope,
// in the message's "headers").
const (
	// HeaderOriginID is the origin message id, msg_<queue>_<offset>.
	HeaderOriginID = "herald-origin-id"
	// HeaderOriginTopic is the topic the message was published to.
	HeaderOriginTopic = "herald-origin-topic"
	// HeaderOriginGroup is the consumer group whose attempts it exhausted.
	HeaderOriginGroup = "herald-origin-group"
	// HeaderAttempts is how many delivery attempts that group made (decimal).
	HeaderAttempts = "herald-attempts"
	// HeaderLastError is the last attempt's error, e.g. "http_status 500".
	HeaderLastError = "herald-last-error"
)

// Headers Herald adds to the message a schedule publishes at each tick, naming the
// schedule and the tick. Workers forward them as they do the origin headers.
const (
	// HeaderSchedule is the name of the schedule that published the message.
	HeaderSchedule = "herald-schedule"
	// HeaderScheduleTick is the tick it was published for (RFC 3339, UTC, ms).
	HeaderScheduleTick = "herald-schedule-tick"
)

// IsHeraldHeader reports whether name is one of the herald-* headers Herald itself
// stores on a message (the dead-letter origin headers, the schedule headers), which
// workers forward like publisher x-* headers.
func IsHeraldHeader(name string) bool {
	switch name {
	case HeaderOriginID, HeaderOriginTopic, HeaderOriginGroup, HeaderAttempts, HeaderLastError, HeaderSchedule, HeaderScheduleTick:
		return true
	}
	return false
}

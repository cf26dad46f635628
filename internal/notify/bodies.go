package notify

import "github.com/heraldhq/herald/models"

// MaxBodyBytesPerPayload caps the bodies one notification over Redis carries
// (32 KiB): a flush whose messages' bodies add up to more is announced
// with ids, tags, keys and times alone, and the workers load those messages from the
// queue table. Every dispatcher subscribed receives every notification, so the cap
// keeps pub/sub traffic to small messages, where the saved SELECT matters most.
const MaxBodyBytesPerPayload = 32 << 10

// wireMsg is the part of a message a notification carries besides what rowsPayload
// lists per row: what a worker needs to POST it without reading the queue table.
type wireMsg struct {
	Body        []byte            `json:"b"`
	ContentType string            `json:"ct,omitempty"`
	Headers     map[string]string `json:"h,omitempty"`
	TraceID     string            `json:"tr,omitempty"`
}

// carriedBodies returns the wire form of every row's message when every row has one
// and their bodies fit MaxBodyBytesPerPayload, else nil.
func carriedBodies(rows []Row) []wireMsg {
	if _, ok := carriedBytes(rows); !ok {
		return nil
	}
	out := make([]wireMsg, len(rows))
	for i, r := range rows {
		out[i] = wireMsg{Body: r.Msg.Body, ContentType: r.Msg.ContentType, Headers: r.Msg.Headers, TraceID: r.Msg.TraceID}
	}
	return out
}

// carriedBytes returns the body bytes of rows and whether a payload of them alone
// would carry the bodies (carriedBodies).
func carriedBytes(rows []Row) (int, bool) {
	n := 0
	for _, r := range rows {
		if r.Msg == nil {
			return 0, false
		}
		n += len(r.Msg.Body)
	}
	return n, n <= MaxBodyBytesPerPayload
}

// attachBodies sets each row's Msg from ms (aligned with ev.Rows) and the row's own
// fields; a list of another length is ignored, so the rows stay hints without bodies.
func attachBodies(ev *Event, ms []wireMsg) {
	if len(ms) != len(ev.Rows) {
		return
	}
	for i := range ev.Rows {
		r := &ev.Rows[i]
		r.Msg = &models.Message{QueueID: ev.Queue, Offset: r.ID, Tag: r.Tag, Key: r.Key, Headers: ms[i].Headers, Body: ms[i].Body,
			ContentType: ms[i].ContentType, TraceID: ms[i].TraceID, CreatedAt: r.CreatedAt}
	}
}

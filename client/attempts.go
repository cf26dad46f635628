package client

import "context"

// GroupAttempt is one delivery attempt of a group: the message it carried (for a
// batch, the member message this row records), its queue and offset, and the attempt.
type GroupAttempt struct {
	MessageID string `json:"message_id"`
	Queue     int64  `json:"queue"`
	Offset    int64  `json:"offset"`
	Attempt
}

// AttemptQuery filters a group's attempt log: Status (an HTTP status, 100 to 599),
// StatusClass (2xx, 3xx, 4xx or 5xx), ErrorClass (a worker error class such as
// timeout or http_5xx) and the time range [Since, Until) in RFC 3339. Empty fields
// do not filter.
type AttemptQuery struct {
	Status, StatusClass, ErrorClass, Since, Until string
}

// ListAttempts returns one page of a group's delivery attempts, newest first
// (GET /api/v1/groups/{group}/attempts). Errors: ErrNotFound, ErrInvalid (a filter).
func (c *Client) ListAttempts(ctx context.Context, group string, q AttemptQuery, o ListOptions) (*Page[GroupAttempt], error) {
	v := o.query()
	for k, s := range map[string]string{"status": q.Status, "status_class": q.StatusClass, "error_class": q.ErrorClass,
		"since": q.Since, "until": q.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var p Page[GroupAttempt]
	return &p, c.do(ctx, request{method: "GET", path: groupPath(group, "attempts"), query: v}, &p)
}

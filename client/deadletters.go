package client

import (
	"context"
	"strconv"
	"time"
)

// DeadLetter is a message that used up its attempts in a group. State is pending,
// redriven or purged; in every state it is kept for the group's
// dead_letter_retention_hours, then deleted by maintenance. DLQOffset is the
// offset of its copy on the group's dead-letter topic (nil until appended).
type DeadLetter struct {
	ID         int64  `json:"id"`
	MessageID  string `json:"message_id"`
	Queue      int64  `json:"queue"`
	Offset     int64  `json:"offset"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"last_status"`
	LastError  string `json:"last_error"`
	State      string `json:"state"`
	DLQTopic   string `json:"dlq_topic"`
	DLQOffset  *int64 `json:"dlq_offset"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
}

// The states ListDeadLetters filters on; "" (DeadLettersAll) lists every state.
const (
	DeadLettersAll      = ""
	DeadLettersPending  = "pending"
	DeadLettersRedriven = "redriven"
	DeadLettersPurged   = "purged"
)

// DeadLetterSelection picks dead letters by ids and/or a created-at range
// [From, To); the zero value selects every pending one.
type DeadLetterSelection struct {
	IDs  []int64
	From time.Time
	To   time.Time
}

func (s DeadLetterSelection) body() map[string]any {
	b := map[string]any{}
	if len(s.IDs) > 0 {
		b["ids"] = s.IDs
	}
	if !s.From.IsZero() {
		b["from"] = s.From.UTC().Format(time.RFC3339Nano)
	}
	if !s.To.IsZero() {
		b["to"] = s.To.UTC().Format(time.RFC3339Nano)
	}
	return b
}

// ListDeadLetters returns one page of a group's dead letters, by id, in state
// (DeadLettersPending, DeadLettersRedriven, DeadLettersPurged, or DeadLettersAll
// for every state). Errors: ErrNotFound; ErrInvalid for another state.
func (c *Client) ListDeadLetters(ctx context.Context, group, state string, o ListOptions) (*Page[DeadLetter], error) {
	q := o.query()
	if state != "" {
		q.Set("state", state)
	}
	var p Page[DeadLetter]
	return &p, c.do(ctx, request{method: "GET", path: groupPath(group, "dead-letters"), query: q}, &p)
}

// RedriveDeadLetters sends the selected pending dead letters back to the group's
// retry topic (attempt 1) and returns how many. Errors: ErrNotFound, ErrInvalid.
func (c *Client) RedriveDeadLetters(ctx context.Context, group string, sel DeadLetterSelection) (int64, error) {
	var out struct {
		N int64 `json:"redriven"`
	}
	err := c.do(ctx, request{method: "POST", path: groupPath(group, "dead-letters", "redrive"), body: sel.body()}, &out)
	return out.N, err
}

// PurgeDeadLetters drops the selected pending dead letters and returns how many.
// Errors: ErrNotFound, ErrInvalid.
func (c *Client) PurgeDeadLetters(ctx context.Context, group string, sel DeadLetterSelection) (int64, error) {
	var out struct {
		N int64 `json:"purged"`
	}
	err := c.do(ctx, request{method: "POST", path: groupPath(group, "dead-letters", "purge"), body: sel.body()}, &out)
	return out.N, err
}

// DeadLetterDetail is one dead letter with the group's recorded attempts of its
// message, oldest first.
type DeadLetterDetail struct {
	DeadLetter
	DeliveryAttempts []Attempt `json:"delivery_attempts"`
}

// GetDeadLetter returns dead letter id of group with its delivery attempts
// (GET /api/v1/groups/{group}/dead-letters/{id}). Errors: ErrNotFound.
func (c *Client) GetDeadLetter(ctx context.Context, group string, id int64) (*DeadLetterDetail, error) {
	var d DeadLetterDetail
	return &d, c.do(ctx, request{method: "GET", path: groupPath(group, "dead-letters", strconv.FormatInt(id, 10))}, &d)
}

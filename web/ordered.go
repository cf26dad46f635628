package web

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// blockedView is one blocked queue of an ordered group on its page.
type blockedView struct {
	Queue     int64
	MessageID string
	Count     int
	Attempts  int
	NextAt    string
	Paused    bool
	LastError string
	Action    string
}

func blockedViews(bs []models.OrderedBlock) []blockedView {
	out := make([]blockedView, 0, len(bs))
	for _, b := range bs {
		v := blockedView{Queue: b.QueueID, MessageID: models.MessageID(b.QueueID, b.Offset), Count: b.Count, Attempts: b.Attempts,
			Paused: b.Paused, LastError: b.LastError, Action: b.Action}
		if !b.NextAt.IsZero() {
			v.NextAt = b.NextAt.UTC().Format("2006-01-02 15:04:05.000")
		}
		out = append(out, v)
	}
	return out
}

// consoleQueueAction skips (dead-letters) or resumes the head a blocked ordered queue
// waits on, through control (audited); the owning dispatcher applies it within a
// heartbeat.
func (s *Console) consoleQueueAction(skip bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		q, err := strconv.ParseInt(c.Param("queue"), 10, 64)
		if err != nil {
			return failure(404, "no queue "+c.Param("queue"))
		}
		ctx, group := c.Request().Context(), c.Param("group")
		verb := "resumed"
		if skip {
			verb = "skipped"
			_, err = s.ctl.SkipBlockedQueue(ctx, actorOf(c), group, q)
		} else {
			_, err = s.ctl.ResumeBlockedQueue(ctx, actorOf(c), group, q)
		}
		if err != nil {
			return err
		}
		return redirectWith(c, consolePath+"/groups/"+group, "Queue "+c.Param("queue")+" will be "+verb+" within a second.")
	}
}

// blockedKeyView is one blocked key of a group ordered by key on its page.
type blockedKeyView struct {
	blockedView
	Key string
}

func blockedKeyViews(bs []models.OrderedKeyBlock) []blockedKeyView {
	out := make([]blockedKeyView, 0, len(bs))
	for _, b := range bs {
		v := blockedKeyView{Key: b.Key, blockedView: blockedView{Queue: b.QueueID, MessageID: models.MessageID(b.QueueID, b.Offset), Count: b.Count,
			Attempts: b.Attempts, Paused: b.Paused, LastError: b.LastError, Action: b.Action}}
		if !b.NextAt.IsZero() {
			v.NextAt = b.NextAt.UTC().Format("2006-01-02 15:04:05.000")
		}
		out = append(out, v)
	}
	return out
}

// consoleKeyAction skips (dead-letters) or resumes what a blocked key of a group
// ordered by key waits on (form fields key and queue), through control (audited);
// the owning dispatcher applies it within a heartbeat.
func (s *Console) consoleKeyAction(skip bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		q, err := strconv.ParseInt(c.FormValue("queue"), 10, 64)
		if err != nil || q < 0 {
			return failure(404, "no queue "+c.FormValue("queue"))
		}
		ctx, group, key := c.Request().Context(), c.Param("group"), c.FormValue("key")
		verb := "resumed"
		if skip {
			verb = "skipped"
			_, err = s.ctl.SkipBlockedKey(ctx, actorOf(c), group, q, key)
		} else {
			_, err = s.ctl.ResumeBlockedKey(ctx, actorOf(c), group, q, key)
		}
		if err != nil {
			return err
		}
		return redirectWith(c, consolePath+"/groups/"+group, "Key "+strconv.Quote(key)+" will be "+verb+" within a second.")
	}
}

// badgeBlockedKeyHeads marks blocked the recent messages a blocked key of a group
// ordered by key waits on: the key's head and the rest of its failed POST (the
// key's first Count messages from the head's offset in its queue), as control's
// states mark a blocked queue's. The key's later messages stay pending: they wait
// behind it. Recent messages are the newest of each topic, so once a key's head is
// among them so are its queue's later messages; blocks are the keys the page lists
// (control.MaxListedBlockedKeys at most).
func badgeBlockedKeyHeads(recent []recentMessage, blocks []models.OrderedKeyBlock) {
	type keyOf struct {
		queue int64
		key   string
	}
	left := make(map[keyOf]int, len(blocks))
	head := make(map[keyOf]int64, len(blocks))
	for _, b := range blocks {
		k := keyOf{b.QueueID, b.Key}
		left[k], head[k] = max(b.Count, 1), b.Offset
	}
	order := make([]int, len(recent))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(recent[a].Queue, recent[b].Queue), cmp.Compare(recent[a].Offset, recent[b].Offset))
	})
	for _, i := range order {
		m := &recent[i]
		k := keyOf{m.Queue, m.Key}
		if n, ok := left[k]; !ok || n == 0 || m.Offset < head[k] || m.State == control.StateFiltered {
			continue // a filtered message was never sent, so no POST carried it
		}
		left[k]--
		if m.State == control.StatePending {
			m.State = control.StateBlocked
		}
	}
}

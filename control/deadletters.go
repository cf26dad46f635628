package control

import (
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// DeadLetterSelection picks a group's pending dead letters by IDs and/or a
// created_at range [From, To) (zero: open); all empty selects every pending one.
type DeadLetterSelection struct {
	IDs      []int64
	From, To time.Time
}

func (s DeadLetterSelection) filter(groupID int64) store.DeadLetterFilter {
	return store.DeadLetterFilter{GroupID: groupID, IDs: s.IDs, From: s.From, To: s.To}
}

// ListDeadLetters returns one page of group name's dead letters in state (empty:
// every state), in id order. Errors: a *models.ValidationError on /state,
// models.ErrNotFound.
func (c *Control) ListDeadLetters(ctx context.Context, name string, state models.DeadLetterState, p PageRequest) (*models.Group, Page[models.DeadLetter], error) {
	var none Page[models.DeadLetter]
	if state != "" && !slices.Contains(models.DeadLetterStates(), state) {
		return nil, none, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/state", Detail: "must be pending, redriven or purged"}}}
	}
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, none, err
	}
	ds, err := c.st.DeadLetterList(ctx, store.DeadLetterFilter{GroupID: g.ID, State: state}, p.After, p.Limit)
	if err != nil {
		return nil, none, err
	}
	return g, pageOf(ds, p.Limit, func(d models.DeadLetter) int64 { return d.ID }), nil
}

// DeadLetter is one dead letter with the delivery attempts its group made.
type DeadLetter struct {
	Group    *models.Group
	Letter   *models.DeadLetter
	Attempts []models.DeliveryAttempt
}

// GetDeadLetter returns dead letter id of group name with its group's attempts,
// oldest first. Errors: models.ErrNotFound.
func (c *Control) GetDeadLetter(ctx context.Context, name string, id int64) (*DeadLetter, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, err
	}
	d, err := c.st.DeadLetterGet(ctx, g.ID, id)
	if err != nil {
		return nil, err
	}
	as, err := c.st.AttemptsByMessage(ctx, d.QueueID, d.Offset)
	if err != nil {
		return nil, err
	}
	out := &DeadLetter{Group: g, Letter: d}
	for _, a := range as {
		if a.GroupID == g.ID {
			out.Attempts = append(out.Attempts, a)
		}
	}
	return out, nil
}

// RedriveDeadLetters puts the selected pending dead letters of group name back on
// its retry schedule, wakes the dispatchers and audits it (dead_letters.redrive).
// It returns how many were redriven. Errors: models.ErrNotFound.
func (c *Control) RedriveDeadLetters(ctx context.Context, a Actor, name string, sel DeadLetterSelection) (int64, error) {
	return c.deadLetterAction(ctx, a, name, sel, "dead_letters.redrive", c.st.DeadLetterRedrive, true)
}

// PurgeDeadLetters marks the selected pending dead letters of group name purged
// (never delivered) and audits it (dead_letters.purge). It returns how many were
// purged. Errors: models.ErrNotFound.
func (c *Control) PurgeDeadLetters(ctx context.Context, a Actor, name string, sel DeadLetterSelection) (int64, error) {
	return c.deadLetterAction(ctx, a, name, sel, "dead_letters.purge", c.st.DeadLetterPurge, false)
}

// deadLetterAction applies op to the selection of group name, wakes the dispatchers
// when wake is set and audits the count as action.
func (c *Control) deadLetterAction(ctx context.Context, a Actor, name string, sel DeadLetterSelection, action string,
	op func(context.Context, store.DeadLetterFilter) (int64, error), wake bool) (int64, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return 0, err
	}
	n, err := op(ctx, sel.filter(g.ID))
	if err != nil {
		return 0, err
	}
	if wake {
		c.notifyGroup(ctx, g.ID)
	}
	c.Record(ctx, a, action, g.Name, nil, selectionRecord(n, sel, a))
	return n, nil
}

func selectionRecord(n int64, sel DeadLetterSelection, a Actor) map[string]any {
	r := map[string]any{"count": n, "ids": sel.IDs, "from": sel.From, "to": sel.To}
	if a.Via != "" {
		r["via"] = a.Via
	}
	return r
}

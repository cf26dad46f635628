package dispatcher

import (
	"github.com/heraldhq/herald/models"
)

// moveSource is what the move rule needs of a group's cursor on a queue a move
// sealed (models.QueueMove): whether its owner holds it (held), the watermark (< 0
// while the seal is under way), how far it has read, whether an id at or below the
// watermark is still an open hole, and the keys with a message still to finish
// there (pending, backing off, in flight or blocked); unfinished says whether any
// message at all is.
type moveSource struct {
	held       bool
	watermark  int64
	readPos    int64
	holes      bool
	keys       map[string]bool
	unfinished bool
}

// readThrough reports whether the group has read the sealed queue up to its
// watermark: the seal took hold, the cursor is held, has read that far and has no
// open hole left below it.
func (m moveSource) readThrough() bool {
	return m.held && m.watermark >= 0 && m.readPos >= m.watermark && !m.holes
}

// keyWaits is the move rule for a group ordered by key: a message of key on the new
// queue waits while any source its slot moved from is not read through or still
// has an unfinished message of key. Unordered groups never wait (nothing calls it).
func keyWaits(sources []moveSource, key string) bool {
	for _, m := range sources {
		if !m.readThrough() || m.keys[key] {
			return true
		}
	}
	return false
}

// queueWaits is the move rule for a group ordered by queue: the new queue waits
// while any source is not read through or has any unfinished message.
func queueWaits(sources []moveSource) bool {
	for _, m := range sources {
		if !m.readThrough() || m.unfinished {
			return true
		}
	}
	return false
}

// moveSourceOf describes gs's cursor on a move's old queue (an absent cursor is not
// held: the group waits for its owner to claim it).
func (d *Dispatcher) moveSourceOf(gs *groupState, mv models.QueueMove, withKeys bool) moveSource {
	src := moveSource{watermark: mv.Watermark}
	cs := d.byGQ[[2]int64{gs.g.ID, mv.From}]
	if cs == nil || cs.takeover != nil {
		return src
	}
	src.held, src.readPos = true, cs.readPos
	for h := range cs.holes {
		if mv.Watermark < 0 || h <= mv.Watermark {
			src.holes = true
			break
		}
	}
	src.unfinished = len(cs.pending) > 0 || len(cs.inflight) > 0 || cs.block != nil || len(cs.keyBlocks) > 0
	if withKeys && src.unfinished {
		src.keys = map[string]bool{}
		for _, p := range cs.pending {
			src.keys[p.key] = true
		}
		for _, f := range cs.inflight {
			src.keys[f.key] = true
		}
		for k := range cs.keyBlocks {
			src.keys[k] = true
		}
	}
	return src
}

// moveHeldKey returns, for a cursor of a group ordered by key, which of its keys
// wait on a move into its queue (keyWaits over the moves whose slots hold the
// key's); nil when no move into the queue is unretired.
func (d *Dispatcher) moveHeldKey(gs *groupState, cs *cursorState) func(key string) bool {
	moves := d.movesTo[cs.queueID]
	if len(moves) == 0 {
		return nil
	}
	sources := make([]moveSource, len(moves))
	slots := make([]map[int]bool, len(moves))
	for i, mv := range moves {
		sources[i] = d.moveSourceOf(gs, mv, true)
		slots[i] = make(map[int]bool, len(mv.Slots))
		for _, s := range mv.Slots {
			slots[i][s] = true
		}
	}
	memo := map[string]bool{}
	return func(key string) bool {
		if w, ok := memo[key]; ok {
			return w
		}
		slot := models.KeySlot(key)
		var from []moveSource
		for i := range moves {
			if slots[i][slot] {
				from = append(from, sources[i])
			}
		}
		w := keyWaits(from, key)
		memo[key] = w
		return w
	}
}

// moveHeldQueue reports whether a cursor of a group ordered by queue waits on a move
// into its queue (queueWaits).
func (d *Dispatcher) moveHeldQueue(gs *groupState, cs *cursorState) bool {
	moves := d.movesTo[cs.queueID]
	if len(moves) == 0 {
		return false
	}
	sources := make([]moveSource, len(moves))
	for i, mv := range moves {
		sources[i] = d.moveSourceOf(gs, mv, false)
	}
	return queueWaits(sources)
}

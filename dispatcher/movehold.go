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

// movedFrom is a move into a cursor's queue and the group's cursor on the move's
// old queue (nil when this dispatcher does not hold it).
type movedFrom struct {
	move models.QueueMove
	from *cursorState
}

// movedFrom lists the unretired moves into cs's queue (movedFrom), or nil.
func (d *Dispatcher) movedFrom(cs *cursorState) []movedFrom {
	moves := d.movesTo[cs.queueID]
	if len(moves) == 0 {
		return nil
	}
	out := make([]movedFrom, len(moves))
	for i, mv := range moves {
		out[i] = movedFrom{move: mv, from: d.byGQ[[2]int64{cs.groupID, mv.From}]}
	}
	return out
}

// moveSourceOf describes m's old queue for the move rule; o, the group's orderer,
// adds what it holds back there (an absent cursor is not held: the group waits for
// its owner to claim it). withKeys collects the keys still to finish.
func moveSourceOf(m movedFrom, o orderer, withKeys bool) moveSource {
	src := moveSource{watermark: m.move.Watermark}
	cs := m.from
	if cs == nil || cs.takeover != nil {
		return src
	}
	src.held, src.readPos = true, cs.readPos
	for h := range cs.holes {
		if m.move.Watermark < 0 || h <= m.move.Watermark {
			src.holes = true
			break
		}
	}
	var keys map[string]bool
	if withKeys {
		keys = map[string]bool{}
	}
	blocked := o.blocked(cs, keys)
	src.unfinished = len(cs.pending) > 0 || len(cs.inflight) > 0 || blocked
	if withKeys && src.unfinished {
		for _, p := range cs.pending {
			keys[p.key] = true
		}
		for _, f := range cs.inflight {
			keys[f.key] = true
		}
		src.keys = keys
	}
	return src
}

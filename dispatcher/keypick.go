package dispatcher

import "time"

// keyPart is one key's share of a blocked POST: its head (lowest) offset and how
// many messages of the key the POST carried.
type keyPart struct {
	head  int64
	count int
}

// keyBlock is a failed POST of a group ordered by key, retried in place: every key
// it carried waits on it (parts), later messages of those keys wait behind it,
// other keys do not. It is sent again as the same messages at at with attempt
// attempts+1, or, when paused, when an operator resumes or skips a key.
type keyBlock struct {
	parts     map[string]keyPart
	attempts  int
	at        time.Time
	paused    bool
	lastError string
}

// due reports whether b may be sent again at now.
func (b *keyBlock) due(now time.Time) bool {
	return !b.paused && !now.Before(b.at)
}

// keyPickIn is what pickKeyed decides from: the cursor's to-send set (offset
// order), the keys with a message in flight, the blocked keys, the offset below
// which messages may go (limit; < 0 for none: the lowest open hole otherwise), the
// time, and the most messages one POST carries.
type keyPickIn struct {
	pending []pendingMsg
	busy    map[string]bool
	blocks  map[string]*keyBlock
	limit   int64
	now     time.Time
	batch   int
	// held, when set, names keys that wait on a move into this queue (movehold.go).
	held func(key string) bool
	// freshFirst prefers a new POST of free keys to a due block, which then goes
	// only when no free key has a message to send: the breaker's probe, which should
	// test the endpoint, not a key's poison message.
	freshFirst bool
	// freshOnly never picks a block.
	freshOnly bool
}

// keyPick is pickKeyed's choice. take indexes pending, in offset order: the
// messages of a due block (retry, sent with its next attempt) or of a new POST.
// wake is the earliest time a message now held back (a block not yet due, a
// returned message backing off) may go; zero for none. resolved lists blocked keys
// whose head is done (its first message to send is past the head): their part of
// the block is void.
type keyPick struct {
	take     []int
	retry    *keyBlock
	wake     time.Time
	resolved []string
}

// pickKeyed chooses a cursor's next POST in a group ordered by key: a message goes
// only when no earlier message of its key is in flight, blocked, backing off or
// left out. A due block goes first (last with freshFirst), alone and whole (the
// same messages, so the same POST again); otherwise up to batch messages of free
// keys, lowest offsets first, each key's messages consecutive in the POST (a key
// whose run was interrupted by another key's message waits for the next POST).
// Keyless messages are not ordered and are never picked here. It does not change
// its input.
func pickKeyed(in keyPickIn) keyPick {
	var out keyPick
	nowMS := in.now.UnixMilli()
	below := func(p pendingMsg) bool { return in.limit < 0 || p.offset < in.limit }
	first, void := keyFirsts(in, below)
	for k := range void {
		out.resolved = append(out.resolved, k)
	}
	// blockedAt reports whether p waits on its key's block (it is the head or later).
	blockedAt := func(p pendingMsg) (*keyBlock, bool) {
		b := in.blocks[p.key]
		if b == nil || void[p.key] || p.offset < b.parts[p.key].head {
			return nil, false
		}
		return b, true
	}
	wakeBy := func(t time.Time) {
		if out.wake.IsZero() || t.Before(out.wake) {
			out.wake = t
		}
	}
	dueBlock := func() bool {
		// A due block whose keys all stand at their heads, lowest head first.
		for _, p := range in.pending {
			if !below(p) {
				break
			}
			b, blocked := blockedAt(p)
			if !blocked || first[p.key] != p.offset || p.offset != b.parts[p.key].head {
				continue
			}
			if !b.due(in.now) {
				if !b.paused {
					wakeBy(b.at)
				}
				continue
			}
			if take, ok := blockTake(in, b, first, void); ok {
				out.take, out.retry = take, b
				return true
			}
		}
		return false
	}
	if !in.freshFirst && !in.freshOnly && dueBlock() {
		return out
	}
	stopped := map[string]bool{}
	taken := map[string]bool{}
	last := ""
	for i, p := range in.pending {
		if len(out.take) == in.batch || !below(p) {
			break
		}
		k := p.key
		if k == "" || stopped[k] {
			continue
		}
		if _, blocked := blockedAt(p); blocked || in.busy[k] || (in.held != nil && in.held(k)) {
			stopped[k] = true
			continue
		}
		if p.notBefore > nowMS {
			stopped[k] = true
			wakeBy(time.UnixMilli(p.notBefore))
			continue
		}
		if taken[k] && last != k {
			stopped[k] = true // its run in this POST was interrupted: the rest go next
			continue
		}
		out.take = append(out.take, i)
		taken[k], last = true, k
	}
	if in.freshFirst && !in.freshOnly && len(out.take) == 0 {
		dueBlock()
	}
	return out
}

// blockTake returns the indexes of b's messages in in.pending: for each key of b
// still standing at its head, its first part.count messages below the limit. It is
// not ok while a key of b has an earlier message to send first (re-read after a
// takeover) or none of b's messages is waiting.
func blockTake(in keyPickIn, b *keyBlock, first map[string]int64, void map[string]bool) ([]int, bool) {
	left := map[string]int{}
	for k, part := range b.parts {
		if void[k] {
			continue
		}
		f, ok := first[k]
		if !ok {
			continue // none waiting (not read yet, or done)
		}
		if f < part.head || in.busy[k] {
			return nil, false
		}
		left[k] = part.count
	}
	var take []int
	for i, p := range in.pending {
		if in.limit >= 0 && p.offset >= in.limit {
			break
		}
		if n := left[p.key]; n > 0 && p.key != "" {
			take = append(take, i)
			left[p.key] = n - 1
		}
	}
	return take, len(take) > 0
}

// keyFirsts returns each key's first offset in the to-send set below the limit,
// and the blocked keys whose block is void: their first offset to send is past the
// block's head (the head was settled elsewhere, or skipped).
func keyFirsts(in keyPickIn, below func(pendingMsg) bool) (first map[string]int64, void map[string]bool) {
	first, void = map[string]int64{}, map[string]bool{}
	for _, p := range in.pending {
		if !below(p) {
			break
		}
		if _, ok := first[p.key]; !ok && p.key != "" {
			first[p.key] = p.offset
		}
	}
	for k, b := range in.blocks {
		if f, ok := first[k]; ok && f > b.parts[k].head {
			void[k] = true
		}
	}
	return first, void
}

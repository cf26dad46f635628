package dispatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// msgs builds a to-send set from "key:offset" pairs given as (key, offset).
func msgs(pairs ...any) []pendingMsg {
	var out []pendingMsg
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, pendingMsg{key: pairs[i].(string), offset: int64(pairs[i+1].(int))})
	}
	return out
}

func TestPickKeyed(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	due := &keyBlock{parts: map[string]keyPart{"a": {head: 1, count: 1}}, attempts: 2, at: now}
	later := &keyBlock{parts: map[string]keyPart{"a": {head: 1, count: 1}}, attempts: 2, at: now.Add(time.Second)}
	paused := &keyBlock{parts: map[string]keyPart{"a": {head: 1, count: 1}}, attempts: 5, paused: true}
	two := &keyBlock{parts: map[string]keyPart{"a": {head: 1, count: 2}, "b": {head: 2, count: 1}}, attempts: 1, at: now}
	for _, tc := range []struct {
		name     string
		pending  []pendingMsg
		busy     []string
		blocks   map[string]*keyBlock
		limit    int64
		batch    int
		take     []int
		retry    *keyBlock
		wake     time.Time
		resolved []string
		probe    bool // freshFirst
		fresh    bool // freshOnly
	}{
		{name: "one message per key per POST at batch size 1", pending: msgs("a", 1, "a", 2, "b", 3), batch: 1, take: []int{0}},
		{name: "a busy key waits, the next key goes", pending: msgs("a", 1, "a", 2, "b", 3), busy: []string{"a"}, batch: 1, take: []int{2}},
		{name: "every key busy: nothing", pending: msgs("a", 1, "b", 2), busy: []string{"a", "b"}, batch: 1},
		{name: "keyless messages are never picked", pending: msgs("", 1, "", 2), batch: 5},
		{name: "a batch keeps each key's run consecutive", pending: msgs("a", 1, "a", 2, "b", 3, "a", 4, "c", 5), batch: 5, take: []int{0, 1, 2, 4}},
		{name: "a batch stops at its size", pending: msgs("a", 1, "b", 2, "c", 3), batch: 2, take: []int{0, 1}},
		{name: "a blocked key waits, others go", pending: msgs("a", 1, "a", 2, "b", 3), blocks: map[string]*keyBlock{"a": later}, batch: 5,
			take: []int{2}, wake: now.Add(time.Second)},
		{name: "a due block goes first, alone", pending: msgs("b", 0, "a", 1, "a", 2), blocks: map[string]*keyBlock{"a": due}, batch: 5,
			take: []int{1}, retry: due},
		{name: "a probe prefers a free key to a due block", pending: msgs("a", 1, "a", 2, "b", 3), blocks: map[string]*keyBlock{"a": due}, batch: 5,
			probe: true, take: []int{2}},
		{name: "a probe with no free key takes the due block", pending: msgs("a", 1, "a", 2), blocks: map[string]*keyBlock{"a": due}, batch: 5,
			probe: true, take: []int{0}, retry: due},
		{name: "a first-pass probe never takes a block", pending: msgs("a", 1, "a", 2), blocks: map[string]*keyBlock{"a": due}, batch: 5,
			probe: true, fresh: true},
		{name: "a paused key waits for good", pending: msgs("a", 1, "b", 2), blocks: map[string]*keyBlock{"a": paused}, batch: 1, take: []int{1}},
		{name: "a block of two keys goes whole", pending: msgs("a", 1, "b", 2, "a", 3, "a", 4), blocks: map[string]*keyBlock{"a": two, "b": two}, batch: 5,
			take: []int{0, 1, 2}, retry: two},
		{name: "a block whose head is done is void", pending: msgs("a", 2, "a", 3), blocks: map[string]*keyBlock{"a": paused}, batch: 5,
			take: []int{0, 1}, resolved: []string{"a"}},
		{name: "messages below a block's head go first (re-read after a takeover)", pending: msgs("a", 0, "a", 1), blocks: map[string]*keyBlock{"a": due}, batch: 5,
			take: []int{0}},
		{name: "nothing at or above the lowest open hole", pending: msgs("a", 1, "b", 5, "c", 9), limit: 5, batch: 5, take: []int{0}},
		{name: "a backing-off head holds its key", pending: []pendingMsg{{key: "a", offset: 1, notBefore: now.UnixMilli() + 500}, {key: "a", offset: 2}, {key: "b", offset: 3}},
			batch: 5, take: []int{2}, wake: now.Add(500 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			busy := map[string]bool{}
			for _, k := range tc.busy {
				busy[k] = true
			}
			limit := tc.limit
			if limit == 0 {
				limit = -1
			}
			got := pickKeyed(keyPickIn{pending: tc.pending, busy: busy, blocks: tc.blocks, limit: limit, now: now, batch: tc.batch, freshFirst: tc.probe, freshOnly: tc.fresh})
			require.Equal(t, tc.take, got.take)
			require.Same(t, tc.retry, got.retry)
			require.Equal(t, tc.wake, got.wake)
			require.Equal(t, tc.resolved, got.resolved)
		})
	}
}

// TestPickKeyedNeverPassesAKey drives the picker over many random histories of
// sends, failures and acknowledgements: no key ever has two POSTs open, and each
// key's messages are acknowledged in offset order.
func TestPickKeyedNeverPassesAKey(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	for seed := range 200 {
		c, ks := &cursorState{}, newKeyState()
		keys := []string{"a", "b", "c", "d"}
		for i := range 40 {
			c.pending = append(c.pending, pendingMsg{offset: int64(i + 1), key: keys[(i*7+seed)%len(keys)]})
		}
		open := map[string][]pendingMsg{} // key → its open POST's messages
		acked := map[string]int64{}
		rnd := uint64(seed + 1)
		next := func(n int) int { rnd = rnd*6364136223846793005 + 1442695040888963407; return int(rnd>>33) % n }
		for step := 0; step < 2000 && (len(c.pending) > 0 || len(open) > 0); step++ {
			busy := map[string]bool{}
			for k := range open {
				busy[k] = true
			}
			if next(2) == 0 {
				pick := pickKeyed(keyPickIn{pending: c.pending, busy: busy, blocks: ks.blocks, limit: -1, now: now, batch: 1 + seed%3})
				for _, k := range pick.resolved {
					ks.unblock(k)
				}
				post := c.takeAt(pick.take)
				for _, p := range post {
					require.False(t, busy[p.key], "seed %d: key %s sent while open", seed, p.key)
					open[p.key] = append(open[p.key], p)
				}
				continue
			}
			for k, post := range open {
				delete(open, k)
				if next(4) == 0 { // failed: back, blocked, due at once
					c.requeue(post)
					ks.block(post, 1, now, false, "500")
					break
				}
				for _, p := range post {
					require.Greater(t, p.offset, acked[k], "seed %d: key %s acknowledged %d after %d", seed, k, p.offset, acked[k])
					acked[k] = p.offset
					if b := ks.blocks[k]; b != nil && b.parts[k].head == p.offset {
						ks.unblock(k)
					}
				}
				break
			}
		}
		require.Empty(t, c.pending, "seed %d: messages left", seed)
	}
}

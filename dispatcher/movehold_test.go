package dispatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestMoveRule checks the move rule: a key on the new queue waits until the sealed
// queue is read through its watermark (sealed, cursor held, read that far, no open
// hole below it) and holds nothing of that key; a queue-ordered cursor waits until
// the sealed queue holds nothing at all.
func TestMoveRule(t *testing.T) {
	done := moveSource{held: true, watermark: 10, readPos: 10}
	require.False(t, keyWaits([]moveSource{done}, "k"))
	require.False(t, queueWaits([]moveSource{done}))
	require.False(t, keyWaits(nil, "k"))

	for name, src := range map[string]moveSource{
		"sealing":     {held: true, watermark: -1, readPos: 10},
		"not held":    {watermark: 10, readPos: 10},
		"behind":      {held: true, watermark: 10, readPos: 9},
		"open hole":   {held: true, watermark: 10, readPos: 10, holes: true},
		"empty, held": {held: true, watermark: -1},
	} {
		require.True(t, keyWaits([]moveSource{src}, "k"), name)
		require.True(t, queueWaits([]moveSource{src}), name)
	}
	busy := moveSource{held: true, watermark: 10, readPos: 10, keys: map[string]bool{"k": true}, unfinished: true}
	require.True(t, keyWaits([]moveSource{busy}, "k"), "k still pending on the sealed queue")
	require.False(t, keyWaits([]moveSource{busy}, "j"), "another key does not wait on k")
	require.True(t, queueWaits([]moveSource{busy}))
	require.True(t, keyWaits([]moveSource{done, busy}, "k"), "any source holding the key holds it")
	empty := moveSource{held: true, watermark: 0}
	require.False(t, keyWaits([]moveSource{empty}, "k"), "an empty sealed queue holds nothing")
}

// TestPickKeyedHeld checks that pickKeyed leaves a held key's messages out and
// sends the others.
func TestPickKeyedHeld(t *testing.T) {
	pending := []pendingMsg{{offset: 1, key: "a"}, {offset: 2, key: "b"}, {offset: 3, key: "a"}, {offset: 4, key: "c"}}
	pick := pickKeyed(keyPickIn{pending: pending, busy: map[string]bool{}, blocks: map[string]*keyBlock{}, limit: -1, now: time.Now(), batch: 10,
		held: func(k string) bool { return k == "a" }})
	var keys []string
	for _, i := range pick.take {
		keys = append(keys, pending[i].key)
	}
	require.Equal(t, []string{"b", "c"}, keys)
}

// TestMovePlan pairs old queues with new ones by position and moves exactly the
// slots each old queue had.
func TestMovePlan(t *testing.T) {
	from := []models.Queue{{ID: 1}, {ID: 2}}
	to := []models.Queue{{ID: 7}, {ID: 8}}
	slots := models.InitialSlots(from)
	moved, next := models.MovePlan(slots, from, to)
	require.Len(t, moved[1], models.KeySlots/2)
	require.Len(t, moved[2], models.KeySlots/2)
	for s := range next {
		require.Equal(t, to[s%2].ID, next[s])
	}
}

package dispatcher

import (
	"slices"

	"github.com/heraldhq/herald/internal/delivery"
)

// keyFloors, for a cursor of a group ordered by key taken over from another owner,
// holds per key the highest offset that owner's ordered jobs reported delivered or
// dead-lettered in its last version (the reports waiting in its list). The owner
// cut a key's message only once every earlier message of the key was done, so
// every lower message of the key is done as well, even where the report saying so
// was popped but never committed (a crash within the owner's last commit delay).
// Such a message is not sent again: it would reach the endpoint after a newer
// message of its key, which would then never be the key's last delivery.
type keyFloors map[string]int64

// keyFloorsOf returns the floors of the done offsets of ordered jobs, by offset →
// key. Keyless messages are not ordered and set no floor.
func keyFloorsOf(done map[int64]string) keyFloors {
	f := keyFloors{}
	for off, k := range done {
		if k != "" && off > f[k] {
			f[k] = off
		}
	}
	if len(f) == 0 {
		return nil
	}
	return f
}

// covers reports whether the message at off of key key is below its key's floor
// (done by the previous owner).
func (f keyFloors) covers(off int64, key string) bool {
	top, ok := f[key]
	return ok && key != "" && off < top
}

// top returns the highest floor.
func (f keyFloors) top() int64 {
	var t int64
	for _, off := range f {
		t = max(t, off)
	}
	return t
}

// orderedDone returns the offsets an ordered job's report says are done for good
// (delivered or dead-lettered), which keyFloors are made from; none for any other
// report (unordered jobs of a group that changed its ordering may finish a key out
// of order, so they prove nothing).
func orderedDone(r delivery.Report) []int64 {
	if !r.Ordered || r.Retry {
		return nil
	}
	return append(delivery.Expand(r.Delivered), delivery.Expand(r.DeadLettered)...)
}

// settleFloors marks done the waiting messages of c below their key's floor and
// unblocks keys whose block's head is below it (the previous owner sent it after
// its last saved block). It drops the floors once nothing below the highest can
// still come to send: the cursor has read past it and no open hole is below it
// (in-flight messages were checked before they were cut).
func (ks *keyState) settleFloors(c *cursorState) {
	var done []int64
	c.pending = slices.DeleteFunc(c.pending, func(p pendingMsg) bool {
		if ks.floors.covers(p.offset, p.key) {
			done = append(done, p.offset)
			return true
		}
		return false
	})
	for _, off := range done {
		c.markDone(off)
	}
	for k, b := range ks.blocks {
		if ks.floors.covers(b.parts[k].head, k) {
			ks.unblock(k)
		}
	}
	top := ks.floors.top()
	if c.readPos < top {
		return
	}
	for h := range c.holes {
		if h < top {
			return
		}
	}
	ks.floors = nil
}

package dispatcher

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
)

// TestCutOrdered: an ordered cursor has at most one job in flight, at parallelism 1,
// holding its lowest offsets in order; an open hole below the head holds the queue
// and one above it ends the job; a blocked head waits for its time (or an operator)
// and is then sent alone with its next attempt number.
func TestCutOrdered(t *testing.T) {
	t.Parallel()
	type job struct {
		offsets []int64
		attempt int
	}
	cases := []struct {
		name string
		prep func(b *cutBundle, cs *cursorState)
		want []job
		wake time.Duration // wakeAt after now; 0 = none asked
	}{
		{name: "one job of the lowest offsets", prep: func(*cutBundle, *cursorState) {},
			want: []job{{span64(1, 4), 1}}},
		{name: "a job in flight holds the queue", prep: func(_ *cutBundle, cs *cursorState) { cs.jobs = 1 }},
		{name: "a hole below the head holds the queue", prep: func(_ *cutBundle, cs *cursorState) {
			cs.pending = cs.pending[2:] // 3.. wait behind hole 2
			cs.holes[2] = 0
		}},
		{name: "a hole above the head ends the job", prep: func(_ *cutBundle, cs *cursorState) {
			cs.holes[3] = 0
		}, want: []job{{span64(1, 2), 1}}},
		{name: "a paused block waits for an operator", prep: func(b *cutBundle, cs *cursorState) {
			b.d.orders.queue.blocks[cs] = &orderedBlock{offset: 1, count: 2, attempts: 3, paused: true}
		}},
		{name: "a block not yet due waits for its time", prep: func(b *cutBundle, cs *cursorState) {
			b.d.orders.queue.blocks[cs] = &orderedBlock{offset: 1, count: 2, attempts: 3, at: b.now.Add(5 * time.Second)}
		}, wake: 5 * time.Second},
		{name: "a due block goes alone, with its next attempt", prep: func(b *cutBundle, cs *cursorState) {
			b.d.orders.queue.blocks[cs] = &orderedBlock{offset: 1, count: 2, attempts: 3, at: b.now}
		}, want: []job{{span64(1, 2), 4}}},
		{name: "resent from the commit: the job stops below the block", prep: func(b *cutBundle, cs *cursorState) {
			b.d.orders.queue.blocks[cs] = &orderedBlock{offset: 3, count: 1, attempts: 1}
		}, want: []job{{span64(1, 2), 1}}},
		{name: "a block whose head is done is cleared", prep: func(b *cutBundle, cs *cursorState) {
			cs.pending = cs.pending[2:]
			b.d.orders.queue.blocks[cs] = &orderedBlock{offset: 1, count: 2, attempts: 1, paused: true}
		}, want: []job{{span64(3, 6), 1}}},
		{name: "a returned head not yet due holds the queue", prep: func(b *cutBundle, cs *cursorState) {
			cs.pending[0].notBefore = b.now.Add(time.Second).UnixMilli()
		}, wake: time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupCut(t, 16, 4)
			gs := b.group(8, 1, 10)
			gs.g.Ordered = true
			cs := gs.cursors[0]
			tc.prep(b, cs)
			b.d.cut(context.Background())
			b.d.cut(context.Background()) // at most one job per cursor
			var got []job
			for _, j := range b.q.jobs {
				require.Equal(t, 1, j.Parallelism)
				require.True(t, j.Ordered)
				got = append(got, job{delivery.Expand(j.Offsets), j.Attempt})
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, len(tc.want), gs.inflightP)
			for _, j := range tc.want {
				for _, off := range j.offsets {
					require.Contains(t, cs.inflight, off)
				}
			}
			if tc.wake == 0 {
				require.True(t, b.d.wakeAt.IsZero() || b.d.wakeAt.Sub(b.now) == time.Hour, "wake at %v", b.d.wakeAt)
			} else {
				require.True(t, b.now.Add(tc.wake).Equal(b.d.wakeAt), "wake at %v", b.d.wakeAt)
			}
		})
	}
}

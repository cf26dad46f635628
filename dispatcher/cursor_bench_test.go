package dispatcher

import "testing"

// BenchmarkCursorDrain measures the cursor bookkeeping per message of a steady drain:
// rows read in batches of 500, all in flight, reported done out of order by job.
func BenchmarkCursorDrain(b *testing.B) {
	c := newTestCursor(0)
	js := &jobState{remaining: map[int64]bool{}}
	off := int64(0)
	for b.Loop() {
		start := off + 1
		for range 500 {
			off++
			c.readPos = off
			c.inflight[off] = inflightMsg{job: js, createdAt: off}
		}
		c.advance()
		// Five jobs of 100 finish in reverse order.
		for j := 4; j >= 0; j-- {
			for o := start + int64(j*100); o < start+int64(j*100)+100; o++ {
				c.markDone(o)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(off), "ns/msg")
}

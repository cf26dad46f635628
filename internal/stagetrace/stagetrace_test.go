package stagetrace

import (
	"testing"
	"time"
)

// TestMarkNamesTheMessage: while off, Now is zero and Mark records nothing; once
// enabled, each mark keeps its stage, time, queue and offset, Drain lists them
// oldest first and forgets them, and the ring keeps the newest capacity marks.
func TestMarkNamesTheMessage(t *testing.T) {
	if !Now().IsZero() {
		t.Fatal("Now read the clock while recording is off")
	}
	Mark(PublishStart, time.Now(), 1, 1)
	Enable()
	defer on.Store(false)
	if got := Drain(); len(got) != 0 {
		t.Fatalf("a mark made while off was kept: %v", got)
	}
	at := Now()
	if at.IsZero() {
		t.Fatal("Now is zero while recording")
	}
	Mark(FlushCommitted, at, 7, 42)
	Mark(PostDone, at.Add(time.Millisecond), 8, 43)
	got := Drain()
	want := []Event{
		{Stage: "flush_committed", At: at.UnixNano(), Queue: 7, Offset: 42},
		{Stage: "post_done", At: at.Add(time.Millisecond).UnixNano(), Queue: 8, Offset: 43},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Drain = %v, want %v", got, want)
	}
	if again := Drain(); len(again) != 0 {
		t.Fatalf("Drain did not forget: %d marks", len(again))
	}

	for i := range capacity + 3 {
		Mark(WorkerStart, at, 1, int64(i))
	}
	got = Drain()
	if len(got) != capacity || got[0].Offset != 3 || got[len(got)-1].Offset != capacity+2 {
		t.Fatalf("after wrapping: %d marks from offset %d to %d, want %d from 3 to %d",
			len(got), got[0].Offset, got[len(got)-1].Offset, capacity, capacity+2)
	}
}

// Package testsignal holds typed signals a component emits at points tests wait on
// ("ownership settled", "commit applied"), modelled on river's testsignal. A signal
// is off until a test calls Init, and then costs production code nothing but one
// nil check per Signal: components keep a struct of Signal fields and tests turn
// them on before Run.
package testsignal

import "time"

// capacity is how many values an initialised signal holds unread; past it the oldest
// is dropped, so a long test that reads only now and then never blocks the component.
const capacity = 1024

// TB is the part of testing.TB a wait needs (so this package does not import testing
// into production binaries).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal is one typed signal. The zero value is off: Signal does nothing. Init turns
// it on; Signal may then be called from one goroutine while tests wait from another
// (values are delivered in order, each to one waiter).
type Signal[T any] struct {
	ch chan T
}

// Init turns the signal on. Call it before the component starts (the start then
// publishes the channel to the component's goroutines).
func (s *Signal[T]) Init() { s.ch = make(chan T, capacity) }

// On reports whether the signal was initialised, for a component to skip building a
// costly value nobody waits for.
func (s *Signal[T]) On() bool { return s.ch != nil }

// Signal emits v if the signal is on, never blocking: when capacity values wait
// unread, the oldest is dropped.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	for {
		select {
		case s.ch <- v:
			return
		default:
		}
		select {
		case <-s.ch:
		default:
		}
	}
}

// WaitFor returns the first value emitted from now on (or waiting unread) for which
// ok is true, dropping the others, and fails tb if none comes within timeout. ok nil
// takes any value.
func (s *Signal[T]) WaitFor(tb TB, timeout time.Duration, ok func(T) bool) T {
	tb.Helper()
	if s.ch == nil {
		tb.Fatalf("testsignal: waiting on a signal that was never initialised")
		var zero T
		return zero
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case v := <-s.ch:
			if ok == nil || ok(v) {
				return v
			}
		case <-deadline.C:
			var zero T
			tb.Fatalf("testsignal: no %T signal within %v", zero, timeout)
			return zero
		}
	}
}

// Drain drops every value waiting unread, so the next WaitFor sees only what is
// emitted after it.
func (s *Signal[T]) Drain() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}

package testsignal

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeTB records a failure instead of ending the test.
type fakeTB struct{ failed string }

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestSignalOffDoesNothing(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Signal(1) // no channel: must neither block nor panic
	s.Drain()
	f := &fakeTB{}
	s.WaitFor(f, time.Millisecond, nil)
	require.Contains(t, f.failed, "never initialised")
}

func TestSignalWaitFor(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Init()
	go func() {
		for i := range 10 {
			s.Signal(i)
		}
	}()
	require.Equal(t, 7, s.WaitFor(t, 5*time.Second, func(v int) bool { return v > 6 }))
	require.Equal(t, 8, s.WaitFor(t, 5*time.Second, nil))
	f := &fakeTB{}
	s.Drain()
	s.WaitFor(f, 10*time.Millisecond, func(v int) bool { return v > 100 })
	require.Contains(t, f.failed, "no int signal")
}

func TestSignalFullDropsOldest(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Init()
	for i := range capacity + 5 {
		s.Signal(i) // never blocks
	}
	require.Equal(t, 5, s.WaitFor(t, time.Second, nil))
}

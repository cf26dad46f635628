package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/models"
)

// TestHealthBookMarks: a node is down from its first failure in a row (later
// failures keep that time and update the error), up from its first answer; a
// down signal taken while the node is up closes when it goes down, one taken while
// it is down is closed already, and one taken after it came back is open again.
func TestHealthBookMarks(t *testing.T) {
	t.Parallel()
	var b healthBook
	t0 := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	b.set(3, nil, t0)
	require.Equal(t, models.NodeHealth{Node: 3, State: models.NodeUp, Since: t0}, b.m[3])
	sig := b.downSignal(3).Done()
	select {
	case <-sig:
		require.FailNow(t, "an up node's signal is open")
	default:
	}
	b.set(3, errors.New("connection refused"), t0.Add(time.Second))
	b.set(3, errors.New("i/o timeout"), t0.Add(2*time.Second))
	require.Equal(t, models.NodeHealth{Node: 3, State: models.NodeDown, Since: t0.Add(time.Second), Error: "i/o timeout"}, b.m[3])
	<-sig // closed by the first failure
	<-b.downSignal(3).Done()
	b.set(3, nil, t0.Add(5*time.Second))
	b.set(3, nil, t0.Add(6*time.Second))
	require.Equal(t, models.NodeHealth{Node: 3, State: models.NodeUp, Since: t0.Add(5 * time.Second)}, b.m[3])
	select {
	case <-b.downSignal(3).Done():
		require.FailNow(t, "a node back up has a fresh signal")
	default:
	}
	b.keepOnly([]int64{1})
	require.NotContains(t, b.m, int64(3), "a retired node is forgotten")
}

// TestOnlyUnreachable: a read's error is "only unreachable nodes" when every
// joined or wrapped part is a NodeUnreachableError, never for nil or another error.
func TestOnlyUnreachable(t *testing.T) {
	t.Parallel()
	down := func(n int64) error { return &NodeUnreachableError{Node: n, Err: errors.New("connection refused")} }
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("syntax error"), false},
		{down(2), true},
		{fmt.Errorf("read: %w", down(2)), true},
		{errors.Join(down(2), down(3)), true},
		{errors.Join(down(2), errors.New("deadlock")), false},
	} {
		require.Equal(t, tc.want, OnlyUnreachable(tc.err), "%v", tc.err)
	}
}

// TestUnreachable: connection-level failures mark a node down; errors a server
// answers with do not.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
		{fmt.Errorf("insert into queue 7: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), true},
		{driver.ErrBadConn, true},
		{mysql.ErrInvalidConn, true},
		{fmt.Errorf("db node 3: %w", models.ErrQueueUnavailable), true},
		{&mysql.MySQLError{Number: 2013, Message: "Lost connection"}, true},
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, false},
		{&mysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, false},
		{&mysql.MySQLError{Number: 1040, Message: "Too many connections"}, false},
		{fmt.Errorf("insert: %w", models.ErrConflict), false},
	} {
		require.Equal(t, tc.want, Unreachable(tc.err), "%v", tc.err)
	}
}

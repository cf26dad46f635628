package dispatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// TestDurableCovers: an offset range is covered by a commit when it ends at or below
// the committed offset and meets none of the listed holes.
func TestDurableCovers(t *testing.T) {
	t.Parallel()
	d := durable{version: 3, offset: 20, holes: []models.Hole{{From: 5, To: 6}, {From: 12, To: 12}}}
	for _, tc := range []struct {
		r    delivery.Range
		want bool
	}{
		{delivery.Range{1, 4}, true},
		{delivery.Range{7, 11}, true},
		{delivery.Range{13, 20}, true},
		{delivery.Range{4, 5}, false},   // ends in a hole
		{delivery.Range{6, 8}, false},   // starts in a hole
		{delivery.Range{10, 14}, false}, // spans a hole
		{delivery.Range{12, 12}, false},
		{delivery.Range{20, 21}, false}, // beyond the commit
		{delivery.Range{21, 21}, false},
	} {
		require.Equal(t, tc.want, d.covers(tc.r), "%v", tc.r)
	}
}

// TestReportLogTrim: the trimming rule. Only a prefix of covered entries goes; an
// entry naming an offset its cursor's last commit does not cover holds back every
// later entry; older versions and reports that claim nothing are covered at once,
// cursors not held after unheldReportKeep.
func TestReportLogTrim(t *testing.T) {
	t.Parallel()
	gq := [2]int64{1, 1}
	other := [2]int64{2, 7}
	rep := func(g [2]int64, v int64, delivered ...delivery.Range) delivery.Report {
		return delivery.Report{Group: g[0], Queue: g[1], Version: v, Delivered: delivered}
	}
	commits := map[[2]int64]durable{gq: {version: 5, offset: 10, holes: []models.Hole{{From: 4, To: 4}}}}
	held := func(k [2]int64) (durable, bool) { d, ok := commits[k]; return d, ok }
	t0 := time.Unix(1000, 0)

	var l reportLog
	l.add("100-0", []delivery.Report{rep(gq, 5, delivery.Range{1, 3})})                                                     // covered
	l.add("100-1", []delivery.Report{rep(gq, 4, delivery.Range{30, 31})})                                                   // an older version
	l.add("101-0", []delivery.Report{{Group: 1, Queue: 1, Version: 5, Retry: true, Delivered: []delivery.Range{{40, 40}}}}) // a retry job's
	l.add("101-1", []delivery.Report{{Group: 1, Queue: 1, Version: 5, Returned: map[delivery.Reason][]delivery.Range{delivery.ReasonThrottled: {{11, 11}}}}})
	l.add("102-0", []delivery.Report{rep(gq, 5, delivery.Range{4, 4})})   // a listed hole: not committed as done
	l.add("103-0", []delivery.Report{rep(gq, 5, delivery.Range{5, 6})})   // covered, but behind 102-0
	l.add("104-0", []delivery.Report{rep(gq, 5, delivery.Range{11, 11})}) // beyond the commit

	id, ok := l.trim(held, t0)
	require.True(t, ok)
	require.Equal(t, "101-2", id, "the prefix up to the first uncovered entry")
	require.Len(t, l.entries, 3)

	_, ok = l.trim(held, t0)
	require.False(t, ok, "nothing new covered: no XTRIM")

	commits[gq] = durable{version: 5, offset: 10} // the hole was delivered and committed
	id, ok = l.trim(held, t0)
	require.True(t, ok)
	require.Equal(t, "103-1", id)
	require.Len(t, l.entries, 1)

	commits[gq] = durable{version: 5, offset: 12}
	id, _ = l.trim(held, t0)
	require.Equal(t, "104-1", id)
	require.Empty(t, l.entries)

	// A cursor not held here: kept for unheldReportKeep from the first check that
	// found it so, since a successor may still replay it.
	l.add("200-0", []delivery.Report{rep(other, 2, delivery.Range{1, 1})})
	l.add("201-0", []delivery.Report{rep(gq, 5, delivery.Range{12, 12})})
	_, ok = l.trim(held, t0)
	require.False(t, ok)
	_, ok = l.trim(held, t0.Add(unheldReportKeep-time.Millisecond))
	require.False(t, ok)
	id, ok = l.trim(held, t0.Add(unheldReportKeep))
	require.True(t, ok)
	require.Equal(t, "201-1", id)

	// A held cursor at an older version than the report (a reset not yet seen here)
	// counts as not held.
	l.add("300-0", []delivery.Report{rep(gq, 6, delivery.Range{1, 1})})
	_, ok = l.trim(held, t0)
	require.False(t, ok)
}

// TestNextStreamID: the MINID that removes an entry is its id with the sequence
// plus one.
func TestNextStreamID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1700000000000-1", nextStreamID("1700000000000-0"))
	require.Equal(t, "5-10", nextStreamID("5-9"))
}

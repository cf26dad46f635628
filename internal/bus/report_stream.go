package bus

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/delivery"
)

// ReportEntry is one entry of a dispatcher's report stream: its stream id and the
// reports it carries (none when it did not parse: it is still trimmed).
type ReportEntry struct {
	ID      string
	Reports []delivery.Report
}

// reportReadMax caps the entries one XREAD takes.
const reportReadMax = 256

// ReportStreams is the dispatchers' end of the report streams (delivery.Keys.Reports,
// one per dispatcher), on both buses: workers add reports to their owner's stream
// (ReportSenders; on InProcess the worker adds durable copies of what it hands over
// in memory), the owner reads them in order without removing them and trims what
// its commits cover, and a successor replays a dead owner's stream, which is what
// lets reports survive the death of their owner (RocketMQ keeps consumer offsets in
// the broker for the same reason). Create it with NewReportStreams.
type ReportStreams struct {
	rdb redis.UniversalClient
	log *slog.Logger
}

// NewReportStreams returns the report streams on rdb.
func NewReportStreams(rdb redis.UniversalClient, log *slog.Logger) *ReportStreams {
	return &ReportStreams{rdb: rdb, log: log}
}

// Read moves the entries of stream key to out, in order, as workers add them
// (XREAD BLOCK from the last id read, up to 256 entries a call, nothing removed),
// until ctx ends. After a read it waits gather() when that is above 0, so the next
// read takes what several worker sends added.
func (s *ReportStreams) Read(ctx context.Context, key string, out chan<- ReportEntry, gather func() time.Duration) {
	last := "0-0"
	for ctx.Err() == nil {
		res, err := s.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{key, last}, Count: reportReadMax, Block: time.Second}).Result()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, redis.Nil) {
				s.log.Warn("read reports", "err", err)
				sleepCtx(ctx, 200*time.Millisecond)
			}
			continue
		}
		for _, st := range res {
			for _, m := range st.Messages {
				last = m.ID
				rs, err := delivery.ParseReportEntry(m.Values)
				if err != nil {
					s.log.Warn("drop malformed report entry", "id", m.ID, "err", err)
				}
				select {
				case out <- ReportEntry{ID: m.ID, Reports: rs}:
				case <-ctx.Done():
					return
				}
			}
		}
		if d := gather(); d > 0 {
			sleepCtx(ctx, d)
		}
	}
}

// trimFor bounds one XTRIM.
const trimFor = 2 * time.Second

// Trim removes the entries of stream key below minID (XTRIM MINID); a failed trim is
// retried by the next one, whose MINID is higher.
func (s *ReportStreams) Trim(ctx context.Context, key, minID string) {
	tctx, cancel := context.WithTimeout(ctx, trimFor)
	defer cancel()
	if err := s.rdb.XTrimMinID(tctx, key, minID).Err(); err != nil {
		s.log.Warn("trim the report stream", "err", err)
	}
}

// Replay returns up to max entries of a previous owner's stream key, whole (XRANGE;
// nothing removed: the owner's groups may go to several new owners), and makes the
// stream expire after keep. On an error it returns what it has and the error: a
// successor then sends again what the previous owner delivered but never committed.
func (s *ReportStreams) Replay(ctx context.Context, key string, max int64, keep time.Duration) ([]ReportEntry, error) {
	msgs, err := s.rdb.XRangeN(ctx, key, "-", "+", max).Result()
	if err != nil {
		return nil, err
	}
	s.rdb.Expire(ctx, key, keep)
	out := make([]ReportEntry, len(msgs))
	for i, m := range msgs {
		rs, _ := delivery.ParseReportEntry(m.Values)
		out[i] = ReportEntry{ID: m.ID, Reports: rs}
	}
	return out, nil
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/models"
)

// Attempt buffering (DESIGN §5): rows are written in multi-row INSERTs at least
// every second or every 1,000 rows. A crash may lose up to a second of rows: they
// are a log; cursors and retry rows are the record.
const (
	attemptFlushRows     = 1000
	attemptFlushInterval = time.Second
)

// recordAttempts queues one attempt row per message of a POST. If the buffer is
// full the rows are dropped with a warning rather than slowing deliveries.
func (w *Worker) recordAttempts(g *cachedGroup, b []models.Message, attempt func(int64) int, out Outcome, latencyMS int64, excerpt []byte) {
	now := time.Now()
	groupID := g.ID
	id := "" // the POST's webhook-id when it was a batch envelope
	if len(b) != 1 || g.BatchSize != 1 {
		id = batchID(g.ID, b)
	}
	for _, m := range b {
		wid := id
		if wid == "" {
			wid = models.MessageID(m.QueueID, m.Offset)
		}
		a := models.DeliveryAttempt{GroupID: groupID, QueueID: m.QueueID, Offset: m.Offset, WebhookID: wid, Attempt: attempt(m.Offset),
			Status: out.Status, ErrorClass: string(out.Class), LatencyMS: int(latencyMS), Excerpt: excerpt, CreatedAt: now}
		select {
		case w.attempts <- a:
		default:
			w.log.Warn("attempt log buffer full; dropping attempt rows")
			return
		}
	}
}

// writeAttempts drains the attempt buffer into the store until ctx ends, then
// flushes what is left.
func (w *Worker) writeAttempts(ctx context.Context) {
	tick := time.NewTicker(attemptFlushInterval)
	defer tick.Stop()
	buf := make([]models.DeliveryAttempt, 0, attemptFlushRows)
	flush := func() {
		if len(buf) == 0 {
			return
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := w.st.AttemptsInsert(fctx, buf); err != nil {
			w.log.Warn("write delivery attempts", "rows", len(buf), "err", err)
		}
		buf = buf[:0]
	}
	for {
		select {
		case a := <-w.attempts:
			buf = append(buf, a)
			if len(buf) >= attemptFlushRows {
				flush()
			}
		case <-tick.C:
			flush()
		case <-ctx.Done():
			for {
				select {
				case a := <-w.attempts:
					buf = append(buf, a)
				default:
					flush()
					return
				}
			}
		}
	}
}

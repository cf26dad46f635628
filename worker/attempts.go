package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
)

// Attempt buffering: rows are written in multi-row INSERTs at least
// every second or every 1,000 rows. A crash may lose up to a second of rows: they
// are a log; cursors and retry rows are the record.
const (
	attemptFlushRows     = 1000
	attemptFlushInterval = time.Second
)

// recordAttempts queues one attempt row per message b of the POST whose webhook-id
// was id. If the buffer is full the rows are dropped with a warning rather than
// slowing deliveries.
func (w *Worker) recordAttempts(g *cachedGroup, id string, b []models.Message, attempt func(int64) int, out webhook.Outcome, latencyMS int64, excerpt []byte) {
	now := time.Now()
	for _, m := range b {
		a := models.DeliveryAttempt{GroupID: g.ID, QueueID: m.QueueID, Offset: m.Offset, WebhookID: id, Attempt: attempt(m.Offset),
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

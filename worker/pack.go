package worker

import (
	"context"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/heraldhq/herald/internal/delivery"
)

// handlePack runs every job of a delivery pack (delivery.TypeDeliverPack) at once,
// each as handle would run it alone: its own fence read, heartbeat, POST
// parallelism and reports under its own TaskID. It returns when the last one has
// flushed its final report, and always nil: asynq's retry is not used, the
// dispatcher re-dispatches each unreported job on its own. The pack takes one of the
// server's concurrency slots; the group's credits, not the slots, bound its POSTs.
func (w *Worker) handlePack(ctx context.Context, t *asynq.Task) error {
	jobs, errs := delivery.ParseDeliverPack(t)
	for _, err := range errs {
		w.log.Error("drop malformed delivery job", "err", err)
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { w.run(ctx, j) })
	}
	wg.Wait()
	return nil
}

package bus

import (
	"fmt"
	"strconv"

	"github.com/hibiken/asynq"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/wire"
)

// TypeDeliverPack names the asynq task that carries several delivery jobs a
// dispatcher cut in one step (jobs of several groups or queues, or a re-dispatched
// job beside new ones), so they cost one enqueue, one dequeue and one completion
// instead of one each. The worker runs every job of the pack at once, each with its
// own identity, fence, deadline, heartbeat and reports, exactly as if it had come
// alone; the pack only shares the asynq round trips. A single job still travels as
// TypeDeliver.
const TypeDeliverPack = "delivery:pack"

// Limits of one pack: at most MaxPackJobs jobs and MaxPackBytes of encoded jobs; a
// step that cut more sends several packs.
const (
	MaxPackJobs  = 64
	MaxPackBytes = 1 << 20
)

// packPayload is the wire form of a pack: each job as NewDeliver would encode it.
type packPayload struct {
	Jobs []wire.RawMessage `json:"jobs"`
}

// EncodeJob returns j's task payload (as NewDeliver's, in the wire encoding),
// without its Messages when they exceed MaxCarriedBytes.
func EncodeJob(j delivery.Job) ([]byte, error) {
	if !j.Carry() {
		j.Messages = nil
	}
	return wire.Marshal(j)
}

// Packs splits encoded jobs, in order, into runs that fit one pack (MaxPackJobs,
// MaxPackBytes); each run is returned as the indexes [from, to) of encoded. A job
// larger than MaxPackBytes alone is a run of its own.
func Packs(encoded [][]byte) [][2]int {
	var out [][2]int
	from, size := 0, 0
	for i, b := range encoded {
		if i > from && (i-from == MaxPackJobs || size+len(b) > MaxPackBytes) {
			out = append(out, [2]int{from, i})
			from, size = i, 0
		}
		size += len(b)
	}
	if from < len(encoded) {
		out = append(out, [2]int{from, len(encoded)})
	}
	return out
}

// NewDeliverPack builds the task for encoded jobs (EncodeJob): TypeDeliver for one,
// TypeDeliverPack for several. Callers add the TaskID (PackTaskID), Queue,
// MaxRetry(0) and a Timeout of the longest deadline among the jobs.
func NewDeliverPack(encoded [][]byte) (*asynq.Task, error) {
	switch len(encoded) {
	case 0:
		return nil, fmt.Errorf("a delivery pack needs at least one job")
	case 1:
		return asynq.NewTask(TypeDeliver, encoded[0]), nil
	}
	p := packPayload{Jobs: make([]wire.RawMessage, len(encoded))}
	for i, b := range encoded {
		p.Jobs[i] = b
	}
	b, err := wire.Marshal(p)
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeDeliverPack, b), nil
}

// PackTaskID is the asynq task id of a task carrying jobs (TaskID of each, in pack
// order): the job's own TaskID when alone, else `pk:<first job's TaskID>+<n>`,
// unique because a job (generation included) is enqueued once.
func PackTaskID(first string, n int) string {
	if n == 1 {
		return first
	}
	return "pk:" + first + "+" + strconv.Itoa(n)
}

// ParseDeliverPack decodes a pack's jobs; a job that does not parse is reported in
// errs (by position) and left out, the others run.
func ParseDeliverPack(t *asynq.Task) (jobs []delivery.Job, errs []error) {
	var p packPayload
	if err := wire.Unmarshal(t.Payload(), &p); err != nil {
		return nil, []error{fmt.Errorf("parse %s payload: %w", TypeDeliverPack, err)}
	}
	for i, raw := range p.Jobs {
		j, err := ParseDeliver(asynq.NewTask(TypeDeliver, raw))
		if err != nil {
			errs = append(errs, fmt.Errorf("job %d of the pack: %w", i, err))
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, errs
}

// TypeDeliver names the asynq task that carries one delivery job.
const TypeDeliver = "delivery:job"

// NewDeliver builds the asynq task for j (EncodeJob). Callers add TaskID, Queue,
// MaxRetry(0) and Timeout.
func NewDeliver(j delivery.Job) (*asynq.Task, error) {
	b, err := EncodeJob(j)
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TypeDeliver, b), nil
}

// ParseDeliver decodes a delivery job; errors name the malformed payload.
func ParseDeliver(t *asynq.Task) (delivery.Job, error) {
	var j delivery.Job
	if err := wire.Unmarshal(t.Payload(), &j); err != nil {
		return j, fmt.Errorf("parse %s payload: %w", TypeDeliver, err)
	}
	if j.Group <= 0 || j.Queue <= 0 || len(j.Offsets) == 0 || j.Parallelism < 1 {
		return j, fmt.Errorf("parse %s payload: missing group, queue, offsets or parallelism", TypeDeliver)
	}
	return j, nil
}

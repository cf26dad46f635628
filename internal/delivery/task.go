// Package delivery is the vocabulary the dispatcher and the workers share: the
// delivery job and the report a worker sends back (task.go), the words both use for
// a failed POST and for messages handed back (vocabulary.go), and every Redis key,
// pub/sub channel and asynq queue name Herald uses (keys.go). internal/bus carries
// jobs and reports between the roles.
package delivery

import (
	"math/bits"
	"slices"
	"strconv"

	"github.com/heraldhq/herald/models"
)

// Range is an inclusive run of offsets [First, Last], JSON-encoded as [first,last].
type Range [2]int64

// Ranges compresses offsets into sorted inclusive ranges.
func Ranges(offsets []int64) []Range {
	s := slices.Clone(offsets)
	slices.Sort(s)
	s = slices.Compact(s)
	var out []Range
	for _, o := range s {
		if n := len(out); n > 0 && out[n-1][1]+1 == o {
			out[n-1][1] = o
			continue
		}
		out = append(out, Range{o, o})
	}
	return out
}

// Expand lists every offset of rs in order.
func Expand(rs []Range) []int64 {
	var out []int64
	for _, r := range rs {
		for o := r[0]; o <= r[1]; o++ {
			out = append(out, o)
		}
	}
	return out
}

// Job is a delivery job: up to job_size messages of one (group, queue), named by
// offset, to be POSTed as ceil(n / batch_size) batches with at most Parallelism
// POSTs at once. Version and Generation fence it: reports of an older cursor version
// are dropped; a re-dispatched job gets Generation+1. Owner is the dispatcher that
// cut it (reports go to its list). Attempt is 1 for first deliveries.
type Job struct {
	Group       int64   `json:"g"`
	Queue       int64   `json:"q"`
	Version     int64   `json:"v"`
	Generation  int     `json:"gen"`
	Owner       string  `json:"o"`
	Offsets     []Range `json:"off"`
	Parallelism int     `json:"p"`
	Attempt     int     `json:"a"`
	// Retry marks a job cut from the retry topic; Attempts then holds each message's
	// attempt number, aligned with Expand(Offsets).
	Retry    bool  `json:"r,omitempty"`
	Attempts []int `json:"as,omitempty"`
	// BatchKeys, for a retry job, names each message's failed POST (aligned like
	// Attempts): messages with different keys are never sent in one POST, so a batch
	// that failed is re-sent as the same batch, under the same batch id.
	BatchKeys []int64 `json:"bk,omitempty"`
	// LastThrottle lists the offsets whose next throttle in a row is the one that
	// counts (ThrottleLimit): a throttle of a POST carrying one of them is a failed
	// attempt.
	LastThrottle []Range `json:"lt,omitempty"`
	// Batch, when above 0, is this job's POST size, smaller than the group's
	// batch_size: a job of messages an endpoint throttled in a batch bisects it
	// (ThrottleLimit).
	Batch int `json:"bs,omitempty"`
	// Probe marks the half-open breaker's single test batch.
	Probe bool `json:"pr,omitempty"`
	// Ordered marks a job of an ordered group (Parallelism 1): its batches go out one
	// after another, and the first failed POST stops it; the failed messages are
	// reported as InPlace and the unsent ones returned with ReasonBlocked.
	Ordered bool `json:"ord,omitempty"`
	// Messages, when set, are the job's messages in offset order with their bodies,
	// as the publishing process held them: the worker then does not load them from
	// the queue table. Only jobs whose messages all came with a local notification
	// carry them, and an asynq payload only up to MaxCarriedBytes of bodies (Carry).
	Messages []models.Message `json:"m,omitempty"`
}

// ThrottleLimit is how many throttles in a row make a message's failed attempt in a
// group whose MaxThrottles is maxThrottles (models.Group.MaxThrottles) and that
// batches batch messages a POST and bisects throttled batches (AWS Lambda's
// BisectBatchOnFunctionError): messages of a throttled POST travel apart from the
// others in POSTs of batch >> throttles, so after at most bits.Len(batch)-1
// halvings the one the endpoint refuses goes alone while its batch-mates get
// through; alone, it has maxThrottles more. The POST that throttles a message the
// limit-th time in a row is its failed attempt (error class http_status), so a
// message an endpoint always refuses follows the retry schedule to a dead letter
// instead of pausing its group forever; the messages of one POST share its count.
// Pass batch 1 where nothing bisects (ordered groups, retry jobs): the limit is
// then maxThrottles. For maxThrottles 10: batch 10 gives 13, batch 100 gives 16.
// A maxThrottles of 0 or less takes models.DefaultMaxThrottles.
func ThrottleLimit(maxThrottles, batch int) int {
	if maxThrottles <= 0 {
		maxThrottles = models.DefaultMaxThrottles
	}
	return maxThrottles + max(bits.Len(uint(max(batch, 1)))-1, 0)
}

// BisectedBatch is the POST size of a job of messages throttled throttles times in a
// row (0: none) in a group of batch size batch: batch >> throttles, at least 1.
func BisectedBatch(batch, throttles int) int {
	if throttles >= bits.UintSize {
		return 1
	}
	return max(batch>>throttles, 1)
}

// MaxCarriedBytes caps the bodies an asynq task payload carries (64 KiB): larger
// jobs go without Messages and the worker loads them.
const MaxCarriedBytes = 64 << 10

// Carry reports whether j's Messages fit in a task payload (MaxCarriedBytes).
func (j Job) Carry() bool {
	n := 0
	for _, m := range j.Messages {
		if n += len(m.Body); n > MaxCarriedBytes {
			return false
		}
	}
	return true
}

// Carried returns j's Messages if they are exactly the messages at offsets (as
// Expand(j.Offsets) lists them), else nil: the worker then loads them.
func (j Job) Carried(offsets []int64) []models.Message {
	if len(j.Messages) != len(offsets) {
		return nil
	}
	for i, m := range j.Messages {
		if m.Offset != offsets[i] || m.QueueID != j.Queue {
			return nil
		}
	}
	return j.Messages
}

// TaskID is `<group>:<queue>:<version>:<first>-<last>:g<generation>`, so a repeated
// enqueue of the same job is refused by asynq and a re-dispatch is not.
func (j Job) TaskID() string {
	first, last := int64(0), int64(0)
	if len(j.Offsets) > 0 {
		first, last = j.Offsets[0][0], j.Offsets[len(j.Offsets)-1][1]
	}
	return strconv.FormatInt(j.Group, 10) + ":" + strconv.FormatInt(j.Queue, 10) + ":" + strconv.FormatInt(j.Version, 10) + ":" +
		strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(last, 10) + ":g" + strconv.Itoa(j.Generation)
}

// InPlace is an ordered job's failed POST to be retried in place (RocketMQ's
// ConsumeMessageOrderlyService SUSPEND_CURRENT_QUEUE_A_MOMENT): Offsets (one POST's
// messages from the earliest failed) failed attempt Attempt and are sent again, the
// same messages, at AtMS (Unix ms). Paused means max_attempts is exhausted and the
// group's ordered_on_exhausted is pause: the queue waits for an operator.
type InPlace struct {
	Offsets   []Range `json:"off"`
	Attempt   int     `json:"a"`
	AtMS      int64   `json:"at,omitempty"`
	Paused    bool    `json:"p,omitempty"`
	LastError string  `json:"le,omitempty"`
}

// Counters summarise a report's POSTs so breaker and stats need no Redis write per
// POST. Latencies are ms. TailFailures counts failed POSTs after the last success
// (all of them when none succeeded); RetryAfterMS is the longest Retry-After seen.
// Repeats counts the failed POSTs whose every failed message had been tried
// before (attempt > 1): a message failing again says more about the message than
// about the endpoint, so the breaker's failure-ratio rule leaves them out.
type Counters struct {
	Successes    int    `json:"s,omitempty"`
	Failures     int    `json:"f,omitempty"`
	Repeats      int    `json:"rp,omitempty"`
	TailFailures int    `json:"tf,omitempty"`
	Throttles    int    `json:"th,omitempty"`
	RetryAfterMS int64  `json:"ra,omitempty"`
	Gone         bool   `json:"gone,omitempty"`
	Delivered    int    `json:"dm,omitempty"` // messages delivered
	FailedMsgs   int    `json:"fm,omitempty"` // messages that failed
	LastStatus   int    `json:"ls,omitempty"`
	LastError    string `json:"le,omitempty"`
	LatencySumMS int64  `json:"lsum,omitempty"`
	LatencyMaxMS int64  `json:"lmax,omitempty"`
}

// Report is a worker's per-message outcome for part or all of a job. Delivered
// offsets were accepted; RetryWritten ones now have a retry row due later and
// DeadLettered ones a dead letter (both written before the report, so all three are
// done for the cursor); Returned offsets go back to the to-send set without an
// attempt counted. NextDueMS is the earliest due time of retry rows written (Unix
// ms). Final marks the job's last report.
type Report struct {
	TaskID       string             `json:"id"`
	Group        int64              `json:"g"`
	Queue        int64              `json:"q"`
	Version      int64              `json:"v"`
	Generation   int                `json:"gen"`
	Delivered    []Range            `json:"d,omitempty"`
	RetryWritten []Range            `json:"rw,omitempty"`
	DeadLettered []Range            `json:"dl,omitempty"`
	NextDueMS    int64              `json:"nd,omitempty"`
	Returned     map[Reason][]Range `json:"r,omitempty"`
	Retry        bool               `json:"rt,omitempty"`
	Probe        bool               `json:"pr,omitempty"`
	Counters     Counters           `json:"c"`
	Final        bool               `json:"fin,omitempty"`
	// InPlace, for an ordered job, is its failed POST to retry in place (see InPlace).
	InPlace *InPlace `json:"ip,omitempty"`
	// Ordered copies the job's Ordered: its delivered and dead-lettered offsets are a
	// prefix of each key's (of the queue's) undone messages, which a new owner relies
	// on after a crash (dispatcher/keyfloor.go).
	Ordered bool `json:"ord,omitempty"`
	// Applied marks the durable copy of a report its owner already applied in
	// memory (`herald all`, bus.InProcess): the owner only records it in its report stream's
	// log for trimming, and a successor that takes the owner's cursors over replays
	// it like any other report, so what a killed process delivered but never
	// committed is not sent again. It carries only what a replay reads.
	Applied bool `json:"ap,omitempty"`
}

package maintenance

import "github.com/heraldhq/herald/internal/testsignal"

// Duty names one of the leader's duties in the DutyRan signal.
type Duty string

// The duties, as DutyRan names them.
const (
	// DutyOutbox is one run of the dead-letter outbox (one batch).
	DutyOutbox Duty = "outbox"
	// DutyLag is one lag sample of every group.
	DutyLag Duty = "lag"
	// DutyHourly is the stats pruning and the attempt partitions.
	DutyHourly Duty = "hourly"
	// DutyRetention is one retention run (one budget).
	DutyRetention Duty = "retention"
	// DutyHygiene is one Redis hygiene walk.
	DutyHygiene Duty = "hygiene"
	// DutyDelayed is one pass of the delayed-message mover.
	DutyDelayed Duty = "delayed"
)

// Duties lists every Duty.
func Duties() []Duty {
	return []Duty{DutyOutbox, DutyLag, DutyHourly, DutyRetention, DutyHygiene, DutyDelayed}
}

// TestSignals are the points of the maintenance loop that tests wait on instead of
// sleeping (testsignal). They are off, costing one nil check each, unless Init is
// called before Run.
type TestSignals struct {
	// DutyRan is emitted after a duty ran as leader (whatever its outcome).
	DutyRan testsignal.Signal[Duty]
}

// Init turns every signal on.
func (ts *TestSignals) Init() { ts.DutyRan.Init() }

package control

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// The read models the queries return, as the store reads them. Transports name them
// here and never import models/store.
type (
	// AuditEntry is one audit log entry (ListAudit).
	AuditEntry = store.AuditEntry
	// MessageSummary is a message without its body (BrowseMessages).
	MessageSummary = store.MessageSummary
	// CursorPosition is one cursor of a group: committed offset, the queue's max
	// offset, open holes, version and owner.
	CursorPosition = store.CursorPosition
	// GroupHealth is a group's delivery counters and breaker state.
	GroupHealth = store.GroupHealth
	// StatsPoint is one minute of published, delivered and failed counts and lag.
	StatsPoint = store.StatsPoint
	// StatsTotals are per-topic and per-group rollup totals since a time.
	StatsTotals = store.StatsTotals
	// QueueOffsets is a queue's lowest and highest stored offsets.
	QueueOffsets = store.QueueOffsets
)

// LagAge is the age in seconds, at now, of the oldest undelivered message whose
// publish time is oldestMS (Unix milliseconds; 0: none, age 0).
func LagAge(oldestMS int64, now time.Time) float64 { return store.LagAge(oldestMS, now) }

// Unavailable reports whether err means the database could not answer (down,
// overloaded, timed out): transports answer 503 with Retry-After for it.
func Unavailable(err error) bool { return store.Unavailable(err) }

// StatsHours is how far back the stats series of the overview, a group and a topic go.
const StatsHours = 3

// Ping checks that the database answers (the readiness probe).
func (c *Control) Ping(ctx context.Context) error { return c.st.Ping(ctx) }

// NodesPing pings every db node that is not retired and returns each node's error
// (nil when it answered), for the readiness probe and herald_db_node_up.
func (c *Control) NodesPing(ctx context.Context) (map[int64]error, error) {
	return c.st.Nodes().NodesPing(ctx)
}

// GetGroup returns group name, secret included: transports blank it for viewers.
// Errors: models.ErrNotFound.
func (c *Control) GetGroup(ctx context.Context, name string) (*models.Group, error) {
	return c.st.GroupGetByName(ctx, name)
}

// GetTopic returns topic name with its queues. Errors: models.ErrNotFound.
func (c *Control) GetTopic(ctx context.Context, name string) (*models.Topic, error) {
	return c.st.TopicGetByName(ctx, name)
}

// APIKeyByPrefix returns the API key with that prefix (revoked ones included: the
// caller checks). Errors: models.ErrNotFound.
func (c *Control) APIKeyByPrefix(ctx context.Context, prefix string) (*models.APIKey, error) {
	return c.st.Accounts().APIKeyGetByPrefix(ctx, prefix)
}

// TouchAPIKey records that key id was just used (its last_used_at).
func (c *Control) TouchAPIKey(ctx context.Context, id int64) error {
	return c.st.Accounts().APIKeyTouch(ctx, id)
}

// AddPublished adds n published messages of topicID to the rollup minute holding minute.
func (c *Control) AddPublished(ctx context.Context, minute time.Time, topicID, n int64) error {
	return c.st.StatsAdd(ctx, minute, 0, topicID, n, 0, 0)
}

// GroupStats is a group's delivery health: lag in messages and seconds, the health
// counters and breaker, retry and pending dead-letter counts and, for an ordered
// group, its blocked queues, and for one ordered by key its blocked keys (the
// first MaxListedBlockedKeys by queue and key) and their count.
type GroupStats struct {
	Group           *models.Group
	Health          GroupHealth
	LagMessages     int64
	LagSeconds      float64
	RetryMessages   int64
	DeadLetters     int64
	Blocked         []models.OrderedBlock
	BlockedKeys     []models.OrderedKeyBlock
	BlockedKeyCount int
	// Unreachable lists the down db nodes holding queues of the group: their lag
	// past the committed offsets is left out of LagMessages and LagSeconds.
	Unreachable []models.NodeHealth
}

// GroupStats reads group name's stats. Errors: models.ErrNotFound.
func (c *Control) GroupStats(ctx context.Context, name string) (GroupStats, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return GroupStats{}, err
	}
	out := GroupStats{Group: g}
	if out.Health, err = c.st.GroupHealthGet(ctx, g.ID); err != nil {
		return out, err
	}
	if out.RetryMessages, err = c.st.RetryCount(ctx, g.ID); err != nil {
		return out, err
	}
	if out.DeadLetters, err = c.st.DeadLetterCount(ctx, g.ID); err != nil {
		return out, err
	}
	ps, err := c.st.Cursors().GroupPositions(ctx, []int64{g.ID}, true)
	if err != nil {
		return out, err
	}
	oldest := int64(0)
	for _, p := range ps {
		out.LagMessages += p.Lag
		if p.OldestUndoneMS > 0 && (oldest == 0 || p.OldestUndoneMS < oldest) {
			oldest = p.OldestUndoneMS
		}
	}
	out.LagSeconds = store.LagAge(oldest, time.Now())
	out.Unreachable = c.unreachableOf(ctx, ps)
	if out.Blocked, err = c.st.Cursors().OrderedBlocksByGroups(ctx, []int64{g.ID}, false); err != nil {
		return out, err
	}
	return out, c.blockedKeys(ctx, g, &out.BlockedKeys, &out.BlockedKeyCount)
}

// blockedKeys reads g's blocked keys (the first MaxListedBlockedKeys) and their
// count, when g has or had ordering by key.
func (c *Control) blockedKeys(ctx context.Context, g *models.Group, list *[]models.OrderedKeyBlock, n *int) error {
	var err error
	if *list, err = c.st.Cursors().OrderedKeyBlocksByGroups(ctx, []int64{g.ID}, false, MaxListedBlockedKeys); err != nil {
		return err
	}
	if len(*list) < MaxListedBlockedKeys {
		*n = len(*list)
		return nil
	}
	// Keys unblocked between the two reads leave the count below the list it
	// follows; the page never shows fewer keys counted than listed.
	*n, err = c.st.Cursors().OrderedKeyBlocksCount(ctx, g.ID)
	*n = max(*n, len(*list))
	return err
}

// GroupCursors returns group name and its cursors with their lag age. Errors:
// models.ErrNotFound.
func (c *Control) GroupCursors(ctx context.Context, name string) (*models.Group, []CursorPosition, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	ps, err := c.st.Cursors().GroupPositions(ctx, []int64{g.ID}, true)
	return g, ps, err
}

// RecentMessage is one of a subscribed topic's newest messages with its delivery
// state for a group.
type RecentMessage struct {
	Topic string
	MessageSummary
	// State is MessageState's word for it.
	State string
}

// Delivery states of a message for a group, as MessageState derives them.
const (
	// StateDelivered: the cursor's committed offset passed it and its commit does not list it as undone.
	StateDelivered = "delivered"
	// StateFiltered: its tag is not one the group subscribes to, so it counts as done.
	StateFiltered = "filtered"
	// StateBlocked: it is the head of a blocked ordered queue, failing and sent again (or paused).
	StateBlocked = "blocked"
	// StatePending: not delivered yet: past the committed offset, listed as undone by the
	// commit (in flight, waiting, or behind an ordered block), or on a queue without a cursor.
	StatePending = "pending"
)

// MessageState is a message's delivery state for a group from the cursor of its
// queue (cur; the zero value when there is none), its queue's ordered block if
// blocked, its offset and whether its tag is subscribed. A message at or below the
// committed offset is delivered only if the commit does not list it as undone: the
// dispatcher commits past messages it has read but not delivered (paused groups,
// blocked ordered queues, in-flight POSTs) and lists them.
func MessageState(cur CursorPosition, block models.OrderedBlock, blocked bool, offset int64, subscribed bool) string {
	switch {
	case !subscribed:
		return StateFiltered
	case blocked && offset >= block.Offset && offset < block.Offset+int64(max(block.Count, 1)):
		return StateBlocked
	case cur.CursorID == 0 || offset > cur.Offset:
		return StatePending
	}
	for _, h := range cur.Undone {
		if offset >= h.From && offset <= h.To {
			return StatePending
		}
	}
	return StateDelivered
}

// GroupDetail is what a group's page shows: the group, its cursors, StatsHours of
// per-minute stats, its health, its newest attempts, the newest messages of its
// topics and, for an ordered group, its blocked queues.
type GroupDetail struct {
	Group    *models.Group
	Cursors  []CursorPosition
	Series   []StatsPoint
	Health   GroupHealth
	Attempts []models.DeliveryAttempt
	Recent   []RecentMessage
	Blocked  []models.OrderedBlock
	// BlockedKeys and BlockedKeyCount: as GroupStats.
	BlockedKeys     []models.OrderedKeyBlock
	BlockedKeyCount int
	// Unreachable lists the down db nodes holding queues of the group (their
	// cursors are marked Unreachable, their messages missing from Recent).
	Unreachable []models.NodeHealth
}

// GroupDetail reads group name's page: the attempts newest first (at most
// attempts; 0 reads none, for a page that searches them with SearchAttempts), the
// recent messages newest first (at most recent of each topic, recent in all).
// Errors: models.ErrNotFound.
func (c *Control) GroupDetail(ctx context.Context, name string, attempts, recent int) (GroupDetail, error) {
	g, ps, err := c.GroupCursors(ctx, name)
	if err != nil {
		return GroupDetail{}, err
	}
	out := GroupDetail{Group: g, Cursors: ps, Unreachable: c.unreachableOf(ctx, ps)}
	now := time.Now()
	if out.Series, err = c.st.StatsSeries(ctx, store.StatsScope{GroupID: g.ID}, now.Add(-StatsHours*time.Hour), now.Add(time.Minute)); err != nil {
		return out, err
	}
	if out.Health, err = c.st.GroupHealthGet(ctx, g.ID); err != nil {
		return out, err
	}
	if attempts > 0 {
		if out.Attempts, err = c.st.AttemptsByGroup(ctx, g.ID, attempts); err != nil {
			return out, err
		}
	}
	if g.Ordered {
		if out.Blocked, err = c.st.Cursors().OrderedBlocksByGroups(ctx, []int64{g.ID}, false); err != nil {
			return out, err
		}
		if err = c.blockedKeys(ctx, g, &out.BlockedKeys, &out.BlockedKeyCount); err != nil {
			return out, err
		}
	}
	out.Recent, err = c.recentMessages(ctx, g, ps, out.Blocked, recent)
	return out, err
}

// recentMessages lists the newest messages of each of g's topics, newest first, at
// most n, with their delivery state for g (MessageState).
func (c *Control) recentMessages(ctx context.Context, g *models.Group, ps []CursorPosition, blocked []models.OrderedBlock, n int) ([]RecentMessage, error) {
	cursors := map[int64]CursorPosition{}
	for _, p := range ps {
		cursors[p.QueueID] = p
	}
	blocks := map[int64]models.OrderedBlock{}
	for _, b := range blocked {
		blocks[b.QueueID] = b
	}
	var all []RecentMessage
	for _, sub := range g.Subscriptions {
		t, err := c.st.TopicGetByName(ctx, sub.Topic)
		if err != nil {
			return nil, err
		}
		ms, err := c.st.Queues().MessagesBrowse(ctx, t, store.MessageFilter{}, n)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			b, isBlocked := blocks[m.QueueID]
			state := MessageState(cursors[m.QueueID], b, isBlocked, m.Offset, sub.Matches(m.Tag))
			all = append(all, RecentMessage{Topic: sub.Topic, MessageSummary: m, State: state})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].CreatedAt > all[j].CreatedAt })
	return all[:min(len(all), n)], nil
}

// Overview is the console's front page: StatsHours of installation-wide stats, every
// group (secrets included) with its lag (messages, by group id), the last hour's
// rollup totals and the topic count.
type Overview struct {
	Series     []StatsPoint
	Groups     []*models.Group
	Lags       map[int64]int64
	Totals     StatsTotals
	TopicCount int64
	// NodesDown lists every db node this process sees down (the overview warns);
	// lags leave out what their queues hold past the committed offsets.
	NodesDown []models.NodeHealth
}

// Overview reads the front page.
func (c *Control) Overview(ctx context.Context) (out Overview, err error) {
	defer func() { out.NodesDown = c.st.Nodes().NodesDown() }() // after the reads, which mark a node they could not reach
	now := time.Now()
	if out.Series, err = c.st.StatsSeries(ctx, store.StatsScope{}, now.Add(-StatsHours*time.Hour), now.Add(time.Minute)); err != nil {
		return out, err
	}
	if out.Groups, err = c.st.GroupList(ctx, 0, 0); err != nil {
		return out, err
	}
	if out.Lags, out.Totals, err = c.GroupLags(ctx); err != nil {
		return out, err
	}
	out.TopicCount, err = c.st.TopicCount(ctx)
	return out, err
}

// GroupLags returns every group's lag (messages, by group id) and the last hour's
// rollup totals.
func (c *Control) GroupLags(ctx context.Context) (map[int64]int64, StatsTotals, error) {
	lags, err := c.st.Cursors().GroupLags(ctx)
	if err != nil {
		return nil, StatsTotals{}, err
	}
	totals, err := c.st.StatsTotalsSince(ctx, time.Now().Add(-time.Hour))
	return lags, totals, err
}

// TopicDetail is what a topic's page shows besides its messages: the topic, its
// stats (TopicStats), the names of its subscribed groups, StatsHours of per-minute
// stats and its retention.
type TopicDetail struct {
	Topic       *models.Topic
	Stats       TopicStats
	Subscribers []string
	Series      []StatsPoint
	Retention   TopicRetention
	// Unreachable lists the down db nodes holding queues of the topic: their
	// offsets, messages and held-back counts are missing from the page.
	Unreachable []models.NodeHealth
}

// TopicDetail reads topic name's page. Errors: models.ErrNotFound.
func (c *Control) TopicDetail(ctx context.Context, name string) (out TopicDetail, err error) {
	t, err := c.st.TopicGetByName(ctx, name)
	if err != nil {
		return TopicDetail{}, err
	}
	out = TopicDetail{Topic: t}
	defer func() { out.Unreachable = NodesDownOf(c.st.Nodes().NodesDown(), t) }() // after the reads
	if out.Stats, err = c.TopicStats(ctx, []*models.Topic{t}); err != nil {
		return out, err
	}
	if out.Subscribers, err = c.st.TopicSubscribers(ctx, t.ID); err != nil {
		return out, err
	}
	now := time.Now()
	if out.Series, err = c.st.StatsSeries(ctx, store.StatsScope{TopicID: t.ID}, now.Add(-StatsHours*time.Hour), now.Add(time.Minute)); err != nil {
		return out, err
	}
	out.Retention, err = c.TopicRetention(ctx, t)
	return out, err
}

// GroupNames returns the names of the first limit groups in id order.
func (c *Control) GroupNames(ctx context.Context, limit int) ([]string, error) {
	gs, err := c.st.GroupList(ctx, 0, limit)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.Name)
	}
	return out, nil
}

// PendingDeadLetters returns how many dead letters of group name wait for a
// redrive or purge. Errors: models.ErrNotFound.
func (c *Control) PendingDeadLetters(ctx context.Context, name string) (int64, error) {
	g, err := c.st.GroupGetByName(ctx, name)
	if err != nil {
		return 0, err
	}
	return c.st.DeadLetterCount(ctx, g.ID)
}

// BatchAttempts returns the attempts of the batch POST with that webhook-id and its
// group's name (empty when the group is gone). Errors: models.ErrNotFound when no
// attempt of it is recorded (never sent, or past attempt retention).
func (c *Control) BatchAttempts(ctx context.Context, webhookID string) (string, []models.DeliveryAttempt, error) {
	as, err := c.st.AttemptsByWebhookID(ctx, webhookID)
	if err != nil {
		return "", nil, err
	}
	if len(as) == 0 {
		return "", nil, fmt.Errorf("batch %s: %w", webhookID, models.ErrNotFound)
	}
	var group string
	if g, err := c.st.GroupGetByID(ctx, as[0].GroupID); err == nil {
		group = g.Name
	}
	return group, as, nil
}

// UserCount returns how many users exist (0: the admin of HERALD_ADMIN_USER may be
// created).
func (c *Control) UserCount(ctx context.Context) (int64, error) {
	return c.st.Accounts().UserCount(ctx)
}

// unreachableOf lists the down db nodes of the cursors ps marks Unreachable.
func (c *Control) unreachableOf(ctx context.Context, ps []CursorPosition) []models.NodeHealth {
	down := c.st.Nodes().NodesDown()
	if len(down) == 0 {
		return nil
	}
	var queues []int64
	for _, p := range ps {
		if p.Unreachable {
			queues = append(queues, p.QueueID)
		}
	}
	if len(queues) == 0 {
		return nil
	}
	nodes, err := c.st.Nodes().QueueNodes(ctx, queues) // cached: queues never move
	if err != nil {
		return down
	}
	var out []models.NodeHealth
	for _, h := range down {
		for _, n := range nodes {
			if n == h.Node {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

// NodesDownOf keeps, of down, the nodes holding one of topic t's queues.
func NodesDownOf(down []models.NodeHealth, t *models.Topic) []models.NodeHealth {
	var out []models.NodeHealth
	for _, h := range down {
		for _, q := range t.Queues {
			if q.NodeID == h.Node || (q.NodeID <= 0 && h.Node == models.PrimaryNodeID) {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/bench/internal/procstat"
)

// nodeSchema is the database of the second db node on its private mariadbd.
const nodeSchema = "herald_node2"

// nodesRun is scenario n's state: the second node's server and its counters.
type nodesRun struct {
	srv     *nodeServer
	counts2 counters // server 2's MariaDB alone
	nodeID  int64
}

// nodeWindow is one reading of both servers' counters and every process's CPU.
type nodeWindow struct {
	c1, c2 countSnap
	cpu    cpuSnap
	m2     time.Duration // CPU of the second mariadbd; -1 unknown
}

// nodeUse is what a phase cost: server 1 (the control database, node 1) with Redis,
// server 2 (node 2), CPU of Herald, both mariadbd and Redis.
type nodeUse struct {
	c1, c2 countUse
	cpu    cpuUse
	m2     time.Duration
}

func (b *bench) nodeSnap(ctx context.Context, nr *nodesRun) nodeWindow {
	w := nodeWindow{c1: b.counts.snap(ctx), c2: nr.counts2.snap(ctx), cpu: b.procs.snap(), m2: -1}
	if d, err := procstat.CPU(nr.srv.pid()); err == nil {
		w.m2 = d
	}
	return w
}

func (a nodeWindow) until(z nodeWindow) nodeUse {
	u := nodeUse{c1: a.c1.until(z.c1), c2: a.c2.until(z.c2), cpu: a.cpu.until(z.cpu), m2: -1}
	if a.m2 >= 0 && z.m2 >= 0 {
		u.m2 = z.m2 - a.m2
	}
	return u
}

// nodePhase is one measured phase of scenario n.
type nodePhase struct {
	label    string // "one node", "two nodes", "node 2 only"
	msgs     int
	rate     float64 // messages/s; 0 for paced phases
	elapsed  time.Duration
	requests int
	spanning int // requests whose messages went to queues on both nodes
	errs     int
	firstErr error
	use      nodeUse
}

// scenarioNodes is (n): one db node against two. It creates the one-node topics,
// starts a second private mariadbd, adds it as node 2 (read-write) through
// POST /api/v1/nodes, creates topics whose 4 queues are split 2/2 over the nodes
// (weights chosen so that placement does so) and topics wholly on node 2, and
// measures side by side, keyless and keyed (-nodes-keys keys): publish throughput
// (16 unpaced publishers, 100 × 1 KiB per request), drain throughput (-nodes-drain
// messages, then a group from earliest, batch 1), and at -trickle-rate single-message
// publishes statements per message on each server and CPU per message of every
// process. At the end node 2 is made read-only and node 1's weight restored, so
// later scenarios place on node 1; the server runs until the benchmark ends.
func (b *bench) scenarioNodes(ctx context.Context) *result {
	r := &result{key: "n", title: "one db node against two (a second private mariadbd added as node 2)"}
	variants := []struct {
		name  string
		keyed bool
	}{{"keyless", false}, {"keyed", true}}

	// One-node topics first: node 2 does not exist yet, so they are placed on node 1.
	one := map[string]placedTopic{}
	for _, kind := range []string{"pub", "drain", "trickle"} {
		for _, v := range variants {
			t, err := b.c.createPlacedTopic(ctx, "bench.n1-"+kind+"-"+v.name, 4)
			if err != nil {
				return r.fail(err)
			}
			one[kind+"-"+v.name] = t
		}
	}

	b.logf("n: starting a second private mariadbd")
	srv, err := startNodeServer(ctx, nodeSchema)
	if err != nil {
		return r.fail(fmt.Errorf("second mariadbd: %w", err))
	}
	b.nodeServers = append(b.nodeServers, srv)
	nr := &nodesRun{srv: srv, counts2: counters{db: srv.db}}
	node, err := b.c.createNode(ctx, "bench-node2", srv.dsn(), "read-write", 100)
	if err != nil {
		return r.fail(fmt.Errorf("add node 2: %w", err))
	}
	nr.nodeID = node.ID
	r.info("node 2", fmt.Sprintf("node id %d, mariadbd pid %d on %s, database %s; added read-write through POST /api/v1/nodes", node.ID, srv.pid(), srv.addr, nodeSchema))
	w1orig := 100
	if ns, err := b.c.listNodes(ctx); err == nil {
		for _, n := range ns {
			if n.ID == 1 {
				w1orig = n.Weight
			}
		}
	}
	defer func() {
		if err := b.c.patchNode(ctx, nr.nodeID, map[string]any{"state": "read-only"}); err != nil {
			r.note("make node 2 read-only after the scenario: %v", err)
		}
		if err := b.c.patchNode(ctx, 1, map[string]any{"weight": w1orig}); err != nil {
			r.note("restore node 1's weight: %v", err)
		}
	}()

	two, only := map[string]placedTopic{}, map[string]placedTopic{}
	for _, kind := range []string{"pub", "drain", "trickle"} {
		for _, v := range variants {
			t, err := b.placeTopic(ctx, nr, "bench.n2-"+kind+"-"+v.name, 4, 2)
			if err != nil {
				return r.fail(err)
			}
			two[kind+"-"+v.name] = t
		}
	}
	for _, v := range variants {
		t, err := b.placeTopic(ctx, nr, "bench.nd-trickle-"+v.name, 4, 4)
		if err != nil {
			return r.fail(err)
		}
		only["trickle-"+v.name] = t
	}
	r.info("placement", fmt.Sprintf("one-node topics: %s each; two-node topics: %s each (weights set through PATCH /api/v1/nodes/{id} before each); node-2 topics: %s each",
		one["pub-keyless"].split(), two["pub-keyless"].split(), only["trickle-keyless"].split()))

	// (a) publish throughput, then drain throughput.
	for _, v := range variants {
		p1 := b.nodesPublish(ctx, nr, one["pub-"+v.name], v.keyed, "one node")
		p2 := b.nodesPublish(ctx, nr, two["pub-"+v.name], v.keyed, "two nodes")
		r.throughputRows("publish, "+v.name, p1, p2)
		if v.keyed {
			r.xaRow("publish, keyed, two nodes", p2)
		}
		r.nodeCostRows("publish, "+v.name, p1, p2)
	}
	for _, v := range variants {
		d1 := b.nodesDrain(ctx, nr, one["drain-"+v.name], v.keyed, "one node")
		d2 := b.nodesDrain(ctx, nr, two["drain-"+v.name], v.keyed, "two nodes")
		r.throughputRows("drain, "+v.name, d1, d2)
		r.nodeCostRows("drain, "+v.name, d1, d2)
	}
	b.nodesStorage(ctx, r, nr, one["drain-keyless"], two["drain-keyless"])

	// (b) statements per message per server at the trickle rate.
	for _, v := range variants {
		t1 := b.nodesTrickle(ctx, nr, one["trickle-"+v.name], v.keyed, "one node")
		t2 := b.nodesTrickle(ctx, nr, two["trickle-"+v.name], v.keyed, "two nodes")
		td := b.nodesTrickle(ctx, nr, only["trickle-"+v.name], v.keyed, "node 2 only")
		r.trickleRows(v.name, t1, t2, td)
	}
	return r
}

// placeTopic sets the weights of nodes 1 and 2 so that placement puts want of the
// topic's n queues on node 2, creates the topic and checks where its queues went.
func (b *bench) placeTopic(ctx context.Context, nr *nodesRun, name string, n, want int) (placedTopic, error) {
	ns, err := b.c.listNodes(ctx)
	if err != nil {
		return placedTopic{}, err
	}
	q1, q2 := 0, 0
	for _, nd := range ns {
		switch nd.ID {
		case 1:
			q1 = nd.Queues
		case nr.nodeID:
			q2 = nd.Queues
		}
	}
	w1, w2, ok := weightsFor(q1, q2, n, want)
	if !ok {
		return placedTopic{}, fmt.Errorf("no weights place %d of %d queues on node 2 (nodes hold %d and %d)", want, n, q1, q2)
	}
	if err := b.c.patchNode(ctx, 1, map[string]any{"weight": w1}); err != nil {
		return placedTopic{}, fmt.Errorf("weight of node 1: %w", err)
	}
	if err := b.c.patchNode(ctx, nr.nodeID, map[string]any{"weight": w2}); err != nil {
		return placedTopic{}, fmt.Errorf("weight of node 2: %w", err)
	}
	t, err := b.c.createPlacedTopic(ctx, name, n)
	if err != nil {
		return t, err
	}
	if got := len(t.onNode(nr.nodeID)); got != want {
		return t, fmt.Errorf("topic %s: weights %d/%d should place %d queues on node 2, placed %d (%s)", name, w1, w2, want, got, t.split())
	}
	return t, nil
}

// keyFor returns message i's key in a keyed variant ("" when keyless).
func (b *bench) keyFor(keyed bool, rng *rand.Rand) string {
	if !keyed {
		return ""
	}
	return fmt.Sprintf("k%04d", rng.IntN(b.opts.nodesKeys))
}

// nodesPublish is scenario c's shape on topic t: -publishers unpaced publishers,
// each posting 100 × 1 KiB messages per request for -nodes-duration. Keyed requests
// draw each message's key at random from -nodes-keys keys (8 envelopes per
// publisher, cycled), so most of them span both nodes of a two-node topic.
func (b *bench) nodesPublish(ctx context.Context, nr *nodesRun, t placedTopic, keyed bool, label string) nodePhase {
	const perReq, envs = 100, 8
	workers := b.opts.publishers
	ph := nodePhase{label: label}
	bodies := make([][][]byte, workers)
	for w := range bodies {
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		for e := range envs {
			msgs := make([]outMsg, perReq)
			for i := range msgs {
				msgs[i] = outMsg{body: padBody((w*envs+e)*perReq+i, 1024), key: b.keyFor(keyed, rng)}
			}
			bodies[w] = append(bodies[w], envelope(msgs))
		}
	}
	pctx, cancel := context.WithTimeout(ctx, b.opts.nodesDur+b.opts.phaseTimeout)
	defer cancel()
	var (
		done, requests, spanning, failed atomic.Int64
		mu                               sync.Mutex
		wg                               sync.WaitGroup
	)
	w0 := b.nodeSnap(ctx, nr)
	start := time.Now()
	deadline := start.Add(b.opts.nodesDur)
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && pctx.Err() == nil; i++ {
				ids, err := b.c.publish(pctx, t.name, bodies[w][i%envs])
				if err == nil && len(ids) != perReq {
					err = fmt.Errorf("sent %d messages, answer lists %d ids", perReq, len(ids))
				}
				if err != nil {
					failed.Add(1)
					mu.Lock()
					if ph.firstErr == nil {
						ph.firstErr = err
					}
					mu.Unlock()
					continue
				}
				requests.Add(1)
				done.Add(perReq)
				if spansNodes(t, ids) {
					spanning.Add(1)
				}
			}
		})
	}
	wg.Wait()
	ph.elapsed = time.Since(start)
	ph.use = w0.until(b.nodeSnap(ctx, nr))
	ph.msgs, ph.requests, ph.spanning, ph.errs = int(done.Load()), int(requests.Load()), int(spanning.Load()), int(failed.Load())
	ph.rate = float64(ph.msgs) / ph.elapsed.Seconds()
	b.logf("n: publish %s (%s): %.0f msg/s", t.name, label, ph.rate)
	return ph
}

// spansNodes reports whether the answer's messages went to queues on both nodes.
func spansNodes(t placedTopic, ids []published) bool {
	seen := map[int64]bool{}
	for _, id := range ids {
		seen[t.node[id.Queue]] = true
	}
	return len(seen) > 1
}

// nodesDrain is scenario a's shape on topic t: -nodes-drain × 1 KiB published with
// no group (8 publishers, 100 per request), then a group from earliest (batch 1,
// max_in_flight 64), timed from its create request to the last distinct receipt.
func (b *bench) nodesDrain(ctx context.Context, nr *nodesRun, t placedTopic, keyed bool, label string) nodePhase {
	n := b.opts.nodesDrainN
	ph := nodePhase{label: label}
	rng := rand.New(rand.NewPCG(uint64(n), 11))
	keys := make([]string, n)
	for i := range keys {
		keys[i] = b.keyFor(keyed, rng)
	}
	pctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	_, err := publishSeries(pctx, b.c, t.name, n, 100, 4<<20, 8, func(i int) outMsg { return outMsg{body: padBody(i, 1024), key: keys[i]} })
	cancel()
	if err != nil {
		ph.errs, ph.firstErr = 1, fmt.Errorf("publish backlog: %w", err)
		return ph
	}
	group := "bench-" + strings.TrimPrefix(t.name, "bench.")
	sk, url := b.rcv.newSink(group)
	w0 := b.nodeSnap(ctx, nr)
	start := time.Now()
	if _, err := b.c.createGroup(ctx, groupSpec{name: group, topic: t.name, endpoint: url, consumeFrom: "earliest", batchSize: 1, maxInFlight: 64}); err != nil {
		ph.errs, ph.firstErr = 1, err
		return ph
	}
	dctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	complete := sk.waitDistinct(dctx, n)
	cancel()
	ph.use = w0.until(b.nodeSnap(ctx, nr))
	st := sk.stats()
	ph.msgs = int(st.distinct)
	if !complete {
		ph.errs, ph.firstErr = 1, fmt.Errorf("drain incomplete: %d of %d received in %s", st.distinct, n, b.opts.phaseTimeout)
	} else {
		ph.elapsed = st.last.Sub(start)
		ph.rate = float64(n) / ph.elapsed.Seconds()
	}
	if err := b.c.pauseGroup(ctx, group); err != nil && ph.firstErr == nil {
		ph.firstErr = fmt.Errorf("pause %s: %w", group, err)
	}
	b.logf("n: drain %s (%s): %.0f msg/s, %d of %d", t.name, label, ph.rate, st.distinct, n)
	return ph
}

// nodesTrickle is scenario h's shape on topic t: a group (batch 1, latest), a
// warm-up message, then single-message publishes paced at -trickle-rate for
// -trickle-duration (64 sending goroutines); counted from just before the first
// publish until liveSettle after the last receipt.
func (b *bench) nodesTrickle(ctx context.Context, nr *nodesRun, t placedTopic, keyed bool, label string) (ph nodePhase) {
	rate, secs := b.opts.trickleRate, int(b.opts.trickleDur/time.Second)
	n := rate * secs
	ph.label = label
	group := "bench-" + strings.TrimPrefix(t.name, "bench.")
	sk, url := b.rcv.newSink(group)
	if _, err := b.c.createGroup(ctx, groupSpec{name: group, topic: t.name, endpoint: url, consumeFrom: "latest", batchSize: 1, maxInFlight: 64}); err != nil {
		ph.errs, ph.firstErr = 1, err
		return ph
	}
	defer func() {
		if err := b.c.pauseGroup(ctx, group); err != nil && ph.firstErr == nil {
			ph.firstErr = fmt.Errorf("pause %s: %w", group, err)
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(rate), 13))
	keys := make([]string, n+1)
	for i := range keys {
		keys[i] = b.keyFor(keyed, rng)
	}
	one := func(i int) error {
		ids, err := b.c.publish(ctx, t.name, envelope([]outMsg{{body: padBody(i, 1024), key: keys[i]}}))
		if err == nil && len(ids) != 1 {
			err = fmt.Errorf("answer lists %d ids for 1 message", len(ids))
		}
		return err
	}
	if err := one(n); err != nil {
		ph.errs, ph.firstErr = 1, fmt.Errorf("warm-up publish: %w", err)
		return ph
	}
	wctx, cancel := context.WithTimeout(ctx, b.opts.phaseTimeout)
	warm := sk.waitDistinct(wctx, 1)
	cancel()
	if !warm {
		ph.errs, ph.firstErr = 1, fmt.Errorf("warm-up message not received within %s", b.opts.phaseTimeout)
		return ph
	}

	jobs := make(chan int, 1024)
	var (
		wg       sync.WaitGroup
		ok, errs atomic.Int64
		mu       sync.Mutex
	)
	for range 64 {
		wg.Go(func() {
			for i := range jobs {
				if err := one(i); err != nil {
					errs.Add(1)
					mu.Lock()
					if ph.firstErr == nil {
						ph.firstErr = err
					}
					mu.Unlock()
					continue
				}
				ok.Add(1)
			}
		})
	}
	w0 := b.nodeSnap(ctx, nr)
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	ph.msgs, ph.errs, ph.requests = int(ok.Load()), int(errs.Load()), int(ok.Load())
	wctx, cancel = context.WithTimeout(ctx, b.opts.phaseTimeout)
	if !sk.waitDistinct(wctx, ph.msgs+1) && ph.firstErr == nil {
		ph.firstErr = fmt.Errorf("%d of %d received", sk.stats().distinct-1, ph.msgs)
	}
	cancel()
	time.Sleep(liveSettle)
	ph.use = w0.until(b.nodeSnap(ctx, nr))
	b.logf("n: trickle %s (%s): %d messages, %d statements on server 1, %d on server 2", t.name, label, ph.msgs, ph.use.c1.questions, ph.use.c2.questions)
	return ph
}

// nodesStorage adds bytes per message on each node after the keyless drains
// (ANALYZE TABLE, data_length + index_length over exact row counts).
func (b *bench) nodesStorage(ctx context.Context, r *result, nr *nodesRun, one, two placedTopic) {
	text := func(u storageUse, err error) string {
		if err != nil {
			return "n/a (" + err.Error() + ")"
		}
		if u.rows == 0 {
			return fmt.Sprintf("n/a (0 rows, %d bytes)", u.bytes)
		}
		return fmt.Sprintf("%.0f B (%.1f MiB / %d rows)", float64(u.bytes)/float64(u.rows), float64(u.bytes)/(1<<20), u.rows)
	}
	u1, err1 := queueStorage(ctx, b.db, b.schema, one.queues)
	u21, err21 := queueStorage(ctx, b.db, b.schema, two.onNode(1))
	u22, err22 := queueStorage(ctx, nr.srv.db, nodeSchema, two.onNode(nr.nodeID))
	r.info("bytes per 1 KiB message on disk after the keyless drain", fmt.Sprintf("one node: %s; two nodes: node 1 %s, node 2 %s",
		text(u1, err1), text(u21, err21), text(u22, err22)))
	r.info("control database: bytes per delivery_attempts row (one per delivered message, on node 1 whatever the queue's node)", text(attemptStorage(ctx, b.db, b.schema)))
}

// attemptStorage is the size of the attempt log on the control database (ANALYZE
// TABLE, data_length + index_length over all partitions) and its exact row count.
func attemptStorage(ctx context.Context, db *sql.DB, schema string) (storageUse, error) {
	var u storageUse
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE delivery_attempts"); err != nil {
		return u, err
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM delivery_attempts").Scan(&u.rows); err != nil {
		return u, err
	}
	err := db.QueryRowContext(ctx, "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.TABLES WHERE table_schema = ? AND table_name = 'delivery_attempts'",
		schema).Scan(&u.bytes)
	return u, err
}

// throughputRows adds the one-node and two-node rates of a phase side by side.
func (r *result) throughputRows(what string, one, two nodePhase) {
	f := func(p nodePhase) string {
		if p.rate == 0 {
			return fmt.Sprintf("n/a (%v)", p.firstErr)
		}
		s := fmt.Sprintf("%.0f msg/s (%d in %s", p.rate, p.msgs, p.elapsed.Round(time.Millisecond))
		if p.requests > 0 {
			s += fmt.Sprintf(", %d requests", p.requests)
		}
		return s + ")"
	}
	v := "one node " + f(one) + "; two nodes " + f(two)
	if one.rate > 0 && two.rate > 0 {
		v += fmt.Sprintf("; two / one = %.2f", two.rate/one.rate)
	}
	r.info(what+" throughput", v)
	for _, p := range []nodePhase{one, two} {
		if p.errs > 0 || p.firstErr != nil {
			r.note("%s, %s: %d failed; first: %v", what, p.label, p.errs, p.firstErr)
		}
	}
}

// xaRow adds how many keyed requests spanned both nodes and how many XA
// transactions the servers ran (XA COMMIT on node 2, the decision rows' INSERTs are
// on the control database).
func (r *result) xaRow(what string, p nodePhase) {
	xa := p.use.c2.mysql["Com_xa_commit"]
	v := fmt.Sprintf("%d of %d requests (%.0f %%) put messages on both nodes, so went under XA; XA transactions %d (%.2f per request; below 1 when a flush merges several)",
		p.spanning, p.requests, pctOf(p.spanning, p.requests), xa, float64(xa)/float64(max(p.requests, 1)))
	r.info(what+": XA share", v)
}

func pctOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// nodeCostRows adds, per message, statements on each server and CPU of each process,
// for the one-node and the two-node phase.
func (r *result) nodeCostRows(what string, ps ...nodePhase) {
	for _, p := range ps {
		if p.msgs == 0 {
			continue
		}
		r.info(what+", "+p.label+": statements per message", stmtsText(p))
		r.info(what+", "+p.label+": CPU-ms per message", cpuText(p))
		r.sharedCores = max(r.sharedCores, othersCores(p.use))
	}
}

// stmtsText spells statements per message on server 1 and server 2.
func stmtsText(p nodePhase) string {
	n := float64(p.msgs)
	s := fmt.Sprintf("server 1 (control db, node 1) %s (Questions %d: %s)", fmtRate(float64(p.use.c1.questions)/n), p.use.c1.questions, top(p.use.c1.mysql, 5, n))
	s += fmt.Sprintf("; server 2 (node 2) %s (Questions %d: %s)", fmtRate(float64(p.use.c2.questions)/n), p.use.c2.questions, top(p.use.c2.mysql, 5, n))
	return s + fmt.Sprintf("; Redis commands %s", fmtRate(float64(p.use.c1.redisTotal)/n))
}

// cpuText spells CPU-ms per message of Herald, both mariadbd, Redis and their sum.
func cpuText(p nodePhase) string {
	u := p.use
	var parts []string
	var sum time.Duration
	for _, x := range []struct {
		name string
		d    time.Duration
	}{{"Herald", u.cpu.herald}, {"MariaDB 1", u.cpu.mariadb}, {"MariaDB 2", u.m2}, {"Redis", u.cpu.redis}} {
		if x.d < 0 {
			parts = append(parts, x.name+" n/a")
			continue
		}
		sum += x.d
		parts = append(parts, fmt.Sprintf("%s %.4f", x.name, msPer(x.d, p.msgs)))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; all four %.4f ms (%.2f cores over %s; other processes %.2f cores)",
		msPer(sum, p.msgs), float64(sum)/float64(u.cpu.wall), u.cpu.wall.Round(time.Millisecond), othersCores(u))
}

func msPer(d time.Duration, n int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(max(n, 1))
}

// othersCores is how many cores processes other than Herald, both mariadbd, Redis
// and the benchmark used.
func othersCores(u nodeUse) float64 {
	if u.cpu.busy < 0 || u.cpu.self < 0 || u.cpu.wall <= 0 {
		return 0
	}
	o := u.cpu.busy - u.cpu.self
	for _, d := range []time.Duration{u.cpu.herald, u.cpu.mariadb, u.m2, u.cpu.redis} {
		o -= max(d, 0)
	}
	return max(float64(o)/float64(u.cpu.wall), 0)
}

// trickleRows adds the paced phases: statements per message per server and CPU,
// the control database's ceiling (≤ 0.05 statements per message when the topic is
// wholly on node 2) and the data nodes' total against one node (≤ 1.15 ×).
func (r *result) trickleRows(variant string, one, two, only nodePhase) {
	what := fmt.Sprintf("%s single-message publishes", variant)
	for _, p := range []nodePhase{one, two, only} {
		if p.errs > 0 || p.firstErr != nil {
			r.note("%s, %s: %d failed; first: %v", what, p.label, p.errs, p.firstErr)
		}
	}
	r.nodeCostRows(what+" (paced)", one, two, only)
	if one.msgs == 0 || only.msgs == 0 {
		return
	}
	ctl := float64(only.use.c1.questions) / float64(only.msgs)
	secs := only.use.c1.wall.Seconds()
	r.check(what+": control database statements per message, topic on node 2", fmt.Sprintf("%s (Questions %d for %d: %s; %.1f statements/s over %.1f s, %.0f msg/s)",
		fmtRate(ctl), only.use.c1.questions, only.msgs, top(only.use.c1.mysql, 6, float64(only.msgs)), float64(only.use.c1.questions)/secs, secs,
		float64(only.msgs)/secs), "≤ 0.05", ctl <= 0.05)
	base := float64(one.use.c1.questions) / float64(one.msgs)
	for _, p := range []nodePhase{two, only} {
		if p.msgs == 0 {
			continue
		}
		both := float64(p.use.c1.questions+p.use.c2.questions) / float64(p.msgs)
		r.check(what+": both servers' statements per message, "+p.label+" / one node", fmt.Sprintf("%s / %s = %.2f", fmtRate(both), fmtRate(base), both/base),
			"≤ 1.15", both <= 1.15*base)
	}
	if xa := two.use.c2.mysql["Com_xa_commit"]; xa > 0 || variant == "keyed" {
		r.info(what+", two nodes: XA transactions", fmt.Sprintf("%d for %d single-message requests (none spans nodes; only a flush merging requests for both nodes would)", xa, two.msgs))
	}
}

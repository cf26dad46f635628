package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/models"
)

// xaPrefix starts every xid Herald writes: `herald-<unix ms>-<16 hex>`, so
// recovery leaves other applications' XA transactions alone and knows each
// branch's age.
const xaPrefix = "herald-"

// XARecoverAge is how old an undecided prepared branch must be before XARecover
// rolls it back: longer than any flush (DefaultFlushTimeout is 10 s), so a live
// writer's branch between its PREPARE and its decision is never touched.
const XARecoverAge = 60 * time.Second

// xaBranch is one node's part of a cross-node flush: a connection held in an XA
// transaction.
type xaBranch struct {
	node     int64
	c        *sql.Conn
	ended    bool
	prepared bool
}

// messagesInsertXA stores a flush whose queues span several db nodes, or whose
// idempotency rows (on the control database) belong to messages on another node,
// with one XA branch per node: XA START, the INSERTs, XA END, XA PREPARE on every
// branch; then the decision row in xa_decisions on the control database
// (autocommit); then XA COMMIT on every branch and the decision row deleted. A
// failure before the decision rolls every branch back (nothing stored). A decision
// write the server refused is such a failure; one whose answer never came
// (connection lost, deadline) may have committed, so every branch is left prepared
// for XARecover, which commits or rolls back all of them by the decision row, and
// the error wraps models.ErrOutcomeUnknown. After the decision, a branch whose XA
// COMMIT failed is committed again from a new connection until ctx ends; one
// still unconfirmed then is XARecover's to commit, and the error wraps
// models.ErrOutcomeUnknown too, so nothing is answered stored (or notified) while
// a branch's rows are not visible. Measured here: docs/decisions.md.
func (s *Queues) messagesInsertXA(ctx context.Context, reqs []*PublishRequest, ins *insertPlan) (err error) {
	if s.tx != nil {
		return fmt.Errorf("publish across db nodes inside a transaction: %w", models.ErrInvalid)
	}
	xid := newXID()
	nodes := ins.nodes
	if controlRows(reqs) && !containsID(nodes, models.PrimaryNodeID) {
		nodes = append(nodes, models.PrimaryNodeID)
	}
	branches := make([]*xaBranch, 0, len(nodes))
	// recovery is set once the decision was asked for: from then on no branch is
	// rolled back here, whatever the outcome; XARecover settles what is left.
	recovery := false
	defer func() {
		if err == nil {
			return
		}
		if recovery {
			for _, b := range branches {
				discard(b.c) // a prepared branch outlives its connection
			}
			return
		}
		// Nothing decided: roll every branch back (a branch whose connection broke is
		// rolled back by its server, or by XARecover once prepared).
		rctx := context.WithoutCancel(ctx)
		for _, b := range branches {
			if !b.ended {
				_, _ = b.c.ExecContext(rctx, "XA END '"+xid+"'")
			}
			if _, err := b.c.ExecContext(rctx, "XA ROLLBACK '"+xid+"'"); err != nil {
				discard(b.c) // its server rolls back, or XARecover once prepared
				continue
			}
			_ = b.c.Close()
		}
	}()
	for _, n := range nodes {
		h, err := s.store().Nodes().node(ctx, n)
		if err != nil {
			return err
		}
		c, err := h.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("db node %d: %w: %w", n, models.ErrQueueUnavailable, err)
		}
		b := &xaBranch{node: n, c: c}
		if _, err := c.ExecContext(ctx, "XA START '"+xid+"'"); err != nil {
			_ = c.Close()
			return fmt.Errorf("xa start on node %d: %w", n, err)
		}
		branches = append(branches, b)
		for _, q := range ins.byNode[n] {
			if err := insertQueueRows(ctx, c, h.mariadb, reqs, q, ins.byQueue[q]); err != nil {
				return fmt.Errorf("node %d: %w", n, err)
			}
		}
		if n == models.PrimaryNodeID {
			if err := writeControlRows(ctx, c, reqs); err != nil {
				return err
			}
		}
	}
	for _, b := range branches {
		b.ended = true
		if _, err := b.c.ExecContext(ctx, "XA END '"+xid+"'"); err != nil {
			return fmt.Errorf("xa end on node %d: %w", b.node, err)
		}
		if _, err := b.c.ExecContext(ctx, "XA PREPARE '"+xid+"'"); err != nil {
			return fmt.Errorf("xa prepare on node %d: %w", b.node, err)
		}
		b.prepared = true
	}
	if _, err := s.pool.ExecContext(ctx, "INSERT INTO xa_decisions (xid) VALUES (?)", xid); err != nil {
		var refused *mysql.MySQLError
		if errors.As(err, &refused) {
			return fmt.Errorf("record commit decision: %w", err) // not written: roll back
		}
		recovery = true
		slog.Warn("xa decision unanswered; recovery settles every branch by it", "xid", xid, "err", err)
		return fmt.Errorf("record commit decision of %s: %w: %w", xid, models.ErrOutcomeUnknown, err)
	}
	// Decided: from here the request is stored, whatever a branch's commit says.
	recovery = true
	var unconfirmed []int64
	for _, b := range branches {
		if _, cerr := b.c.ExecContext(ctx, "XA COMMIT '"+xid+"'"); cerr != nil {
			discard(b.c) // detaches the branch, so another session may commit it
			if !s.xaCommitAgain(ctx, b.node, xid, cerr) {
				unconfirmed = append(unconfirmed, b.node)
			}
			continue
		}
		_ = b.c.Close()
	}
	if len(unconfirmed) > 0 {
		return fmt.Errorf("xa commit of %s unconfirmed on nodes %v (recovery commits it): %w", xid, unconfirmed, models.ErrOutcomeUnknown)
	}
	_, _ = s.pool.ExecContext(context.WithoutCancel(ctx), "DELETE FROM xa_decisions WHERE xid = ?", xid)
	return nil
}

// discard closes c's connection instead of returning it to its pool: a session
// holding a prepared branch can run nothing else, and its server detaches the
// branch (kept for XA COMMIT or ROLLBACK from any session) once it disconnects.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// xaCommitRetry is the pause between two XA COMMITs of a decided branch whose
// commit failed.
const xaCommitRetry = 100 * time.Millisecond

// errXANotA is the server's XAER_NOTA: no prepared branch has the xid.
const errXANotA = 1397

// xaCommitAgain commits the decided branch xid of node from new connections, after
// its first XA COMMIT failed with first, until one succeeds or ctx ends, and
// reports whether the branch is known committed. XAER_NOTA counts as committed: a
// decided branch is never rolled back, so the first COMMIT took effect and only
// its answer was lost (or XARecover committed it meanwhile).
func (s *Queues) xaCommitAgain(ctx context.Context, node int64, xid string, first error) bool {
	err := first
	for {
		var mysqlErr *mysql.MySQLError
		if errors.As(err, &mysqlErr) && mysqlErr.Number == errXANotA {
			return true
		}
		select {
		case <-ctx.Done():
			slog.Warn("xa commit unconfirmed; recovery commits the prepared branch", "node", node, "xid", xid, "err", err)
			return false
		case <-time.After(xaCommitRetry):
		}
		h, herr := s.store().Nodes().node(ctx, node)
		if herr != nil {
			err = herr
			continue
		}
		if _, err = h.db.ExecContext(ctx, "XA COMMIT '"+xid+"'"); err == nil {
			return true
		}
	}
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func newXID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return xaPrefix + strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + hex.EncodeToString(b[:])
}

// xidTime returns the creation time encoded in a Herald xid, or false for another
// application's xid.
func xidTime(xid string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(xid, xaPrefix)
	if !ok {
		return time.Time{}, false
	}
	ms, _, ok := strings.Cut(rest, "-")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(n), true
}

// XARecover resolves Herald's prepared XA branches on every db node that is not
// retired (XA RECOVER on each): a branch whose xid has a row in xa_decisions is
// committed whatever its age, any other is rolled back once older than
// XARecoverAge; decision rows no branch
// needs any more are deleted. It returns how many branches it resolved. A node that
// does not answer is skipped (its error is returned after the others ran).
func (s *Queues) XARecover(ctx context.Context) (int, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Raw("SELECT id FROM db_nodes WHERE state <> ? ORDER BY id", string(models.NodeRetired)).Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("read nodes: %w", err)
	}
	if len(ids) <= 1 {
		return 0, nil // the control database alone: no request spans nodes
	}
	resolved := 0
	var errs []error
	pending := false
	for _, id := range ids {
		n, left, err := s.xaRecoverNode(ctx, id)
		resolved += n
		pending = pending || left
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", id, err))
		}
	}
	if len(errs) == 0 && !pending {
		cut := time.Now().Add(-XARecoverAge)
		_, _ = s.pool.ExecContext(ctx, "DELETE FROM xa_decisions WHERE created_at < ?", cut.UTC())
	}
	return resolved, errors.Join(errs...)
}

// xaPrepared lists the xids of Herald's prepared XA branches on the server of q
// (XA RECOVER; other applications' branches left out).
func xaPrepared(ctx context.Context, q conn) ([]string, error) {
	rows, err := q.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return nil, fmt.Errorf("xa recover: %w", err)
	}
	defer rows.Close()
	var xids []string
	for rows.Next() {
		var format, glen, blen int64
		var data []byte
		if err := rows.Scan(&format, &glen, &blen, &data); err != nil {
			return nil, err
		}
		if int64(len(data)) < glen {
			continue
		}
		if xid := string(data[:glen]); strings.HasPrefix(xid, xaPrefix) {
			if _, ok := xidTime(xid); ok {
				xids = append(xids, xid)
			}
		}
	}
	return xids, rows.Err()
}

// xaRecoverNode resolves the old prepared Herald branches of one node; left
// reports whether younger ones remain (their decision rows are kept).
func (s *Queues) xaRecoverNode(ctx context.Context, nodeID int64) (resolved int, left bool, err error) {
	h, err := s.store().Nodes().node(ctx, nodeID)
	if err != nil {
		return 0, false, err
	}
	xids, err := xaPrepared(ctx, h.db)
	if err != nil {
		return 0, false, err
	}
	for _, xid := range xids {
		t, _ := xidTime(xid)
		var one int
		derr := s.pool.QueryRowContext(ctx, "SELECT 1 FROM xa_decisions WHERE xid = ?", xid).Scan(&one)
		var stmt string
		switch {
		case derr == nil:
			// Decided: committing at once is safe at any age (a live writer's own
			// COMMIT of the same branch then finds it gone, and the request is
			// stored either way), and it makes a returning node's rows visible
			// within the gap rule's timeout.
			stmt = "XA COMMIT '" + xid + "'"
		case !errors.Is(derr, sql.ErrNoRows):
			return resolved, left, fmt.Errorf("read decision of %s: %w", xid, derr)
		case time.Since(t) < XARecoverAge:
			// Undecided and young: a live writer may still decide it.
			left = true
			continue
		default:
			stmt = "XA ROLLBACK '" + xid + "'"
		}
		if _, err := h.db.ExecContext(ctx, stmt); err != nil {
			if time.Since(t) < XARecoverAge {
				// Still held by the live writer's session, which commits it itself.
				left = true
				continue
			}
			return resolved, left, fmt.Errorf("%s: %w", stmt, err)
		}
		resolved++
	}
	return resolved, left, nil
}

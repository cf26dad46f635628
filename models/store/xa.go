package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

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
// failure before the decision rolls every branch back (nothing stored); after it,
// a branch that did not commit stays prepared and XARecover commits it. Measured
// here: docs/decisions.md.
func (s *Store) messagesInsertXA(ctx context.Context, reqs []*PublishRequest, ins *insertPlan) (err error) {
	if s.tx != nil {
		return fmt.Errorf("publish across db nodes inside a transaction: %w", models.ErrInvalid)
	}
	xid := newXID()
	nodes := ins.nodes
	if hasIdempotency(reqs) && !containsID(nodes, models.PrimaryNodeID) {
		nodes = append(nodes, models.PrimaryNodeID)
	}
	branches := make([]*xaBranch, 0, len(nodes))
	defer func() {
		if err == nil {
			return
		}
		// Nothing decided: roll every branch back (a branch whose connection broke is
		// rolled back by its server, or by XARecover once prepared).
		rctx := context.WithoutCancel(ctx)
		for _, b := range branches {
			if !b.ended {
				_, _ = b.c.ExecContext(rctx, "XA END '"+xid+"'")
			}
			_, _ = b.c.ExecContext(rctx, "XA ROLLBACK '"+xid+"'")
			_ = b.c.Close()
		}
	}()
	for _, n := range nodes {
		h, err := s.node(ctx, n)
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
			if err := insertIdempotency(ctx, c, reqs); err != nil {
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
		return fmt.Errorf("record commit decision: %w", err)
	}
	// Decided: from here the request is stored, whatever a branch's commit says.
	cctx := context.WithoutCancel(ctx)
	all := true
	for _, b := range branches {
		if _, err := b.c.ExecContext(cctx, "XA COMMIT '"+xid+"'"); err != nil {
			all = false
			slog.Warn("xa commit failed; recovery commits the prepared branch", "node", b.node, "xid", xid, "err", err)
		}
		_ = b.c.Close()
	}
	if all {
		_, _ = s.pool.ExecContext(cctx, "DELETE FROM xa_decisions WHERE xid = ?", xid)
	}
	return nil
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
func (s *Store) XARecover(ctx context.Context) (int, error) {
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

// xaRecoverNode resolves the old prepared Herald branches of one node; left
// reports whether younger ones remain (their decision rows are kept).
func (s *Store) xaRecoverNode(ctx context.Context, nodeID int64) (resolved int, left bool, err error) {
	h, err := s.node(ctx, nodeID)
	if err != nil {
		return 0, false, err
	}
	rows, err := h.db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return 0, false, fmt.Errorf("xa recover: %w", err)
	}
	var xids []string
	for rows.Next() {
		var format, glen, blen int64
		var data []byte
		if err := rows.Scan(&format, &glen, &blen, &data); err != nil {
			rows.Close()
			return 0, false, err
		}
		if int64(len(data)) >= glen {
			xids = append(xids, string(data[:glen]))
		}
	}
	rows.Close()
	for _, xid := range xids {
		t, ok := xidTime(xid)
		if !ok {
			continue
		}
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

package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm/clause"

	"github.com/heraldhq/herald/models"
)

type nodeRow struct {
	ID        int64 `gorm:"primaryKey"`
	Name      string
	DsnEnc    *string
	Weight    int
	State     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (nodeRow) TableName() string { return "db_nodes" }

// nodeColumns reads a node row with the number of queues placed on it.
const nodeColumns = "n.id, n.name, n.dsn_enc, n.weight, n.state, n.created_at, n.updated_at, (SELECT COUNT(*) FROM queues q WHERE q.node_id = n.id AND q.state <> 'retired')"

// MaskDSN shows a DSN without its secret: `user:***@tcp(host:port)/db` (no
// parameters, which may name TLS material). A DSN that does not parse shows as
// "(unparsable dsn)".
func MaskDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparsable dsn)"
	}
	user := cfg.User
	if cfg.Passwd != "" {
		user += ":***"
	}
	return fmt.Sprintf("%s@%s(%s)/%s", user, cfg.Net, cfg.Addr, cfg.DBName)
}

// NodeProbe connects to dsn once (dial timeout DefaultDialTimeout, or the DSN's),
// checks that the server answers, that its database exists and that
// auto_increment_increment is 1 (the gap rule needs every id), and closes the
// connection. It returns the server's VERSION(). Errors say which check failed.
func NodeProbe(ctx context.Context, dsn string) (string, error) {
	cfg, err := NormalizeNodeDSN(dsn)
	if err != nil {
		return "", err
	}
	if cfg.DBName == "" {
		return "", fmt.Errorf("the dsn names no database (…/dbname)")
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return "", fmt.Errorf("open mysql: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var version string
	var incr int
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@auto_increment_increment").Scan(&version, &incr); err != nil {
		return "", fmt.Errorf("connect to mysql at %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	if incr != 1 {
		return "", fmt.Errorf("auto_increment_increment is %d on %s; Herald's gap rule needs 1", incr, cfg.Addr)
	}
	return version, nil
}

// sameDatabase reports whether DSNs a and b name the same address and database.
func sameDatabase(a, b string) bool {
	ca, errA := mysql.ParseDSN(a)
	cb, errB := mysql.ParseDSN(b)
	return errA == nil && errB == nil && ca.Net == cb.Net && ca.Addr == cb.Addr && ca.DBName == cb.DBName
}

// NodeList returns up to limit nodes with id > after, in id order, retired ones
// included, each with its queue count and masked DSN (the primary's is the control
// database's).
func (s *Nodes) NodeList(ctx context.Context, after int64, limit int) ([]*models.Node, error) {
	return s.nodes(ctx, "n.id > ? ORDER BY n.id LIMIT ?", after, limit)
}

// NodeGet returns node id, or ErrNotFound.
func (s *Nodes) NodeGet(ctx context.Context, id int64) (*models.Node, error) {
	ns, err := s.nodes(ctx, "n.id = ?", id)
	if err != nil {
		return nil, err
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("node %d: %w", id, models.ErrNotFound)
	}
	return ns[0], nil
}

func (s *Nodes) nodes(ctx context.Context, where string, args ...any) ([]*models.Node, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT "+nodeColumns+" FROM db_nodes n WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	defer rows.Close()
	var out []*models.Node
	for rows.Next() {
		n, err := s.scanNode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func (s *Nodes) scanNode(r interface{ Scan(...any) error }) (*models.Node, error) {
	var n models.Node
	var sealed sql.NullString
	var state string
	if err := r.Scan(&n.ID, &n.Name, &sealed, &n.Weight, &state, &n.CreatedAt, &n.UpdatedAt, &n.Queues); err != nil {
		return nil, fmt.Errorf("scan node: %w", err)
	}
	n.State = models.NodeState(state)
	if !sealed.Valid {
		n.DSNMasked = MaskDSN(s.dsn) // the primary: the control database
		return &n, nil
	}
	plain, err := s.keys.Open(sealed.String)
	if err != nil {
		return nil, fmt.Errorf("open dsn of node %d: %w", n.ID, err)
	}
	n.DSN, n.DSNMasked = plain, MaskDSN(plain)
	return &n, nil
}

// NodeCreate stores n (Name, DSN sealed with the Store's keyring, Weight, State) and
// fills its ID and times. It returns ErrConflict when the name is taken or another
// node (the primary included) names the same address and database. It does not
// connect: NodeProbe does.
func (s *Nodes) NodeCreate(ctx context.Context, n *models.Node) error {
	return s.store().WithTx(ctx, func(tx *Store) error {
		if err := tx.Nodes().nodeSameDatabase(ctx, 0, n.DSN); err != nil {
			return err
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		sealed := tx.keys.Seal(n.DSN)
		r := nodeRow{Name: n.Name, DsnEnc: &sealed, Weight: n.Weight, State: string(n.State), CreatedAt: now, UpdatedAt: now}
		if err := tx.db.WithContext(ctx).Create(&r).Error; err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("node %q: %w", n.Name, models.ErrConflict)
			}
			return fmt.Errorf("insert node: %w", err)
		}
		n.ID, n.CreatedAt, n.UpdatedAt, n.DSNMasked = r.ID, now, now, MaskDSN(n.DSN)
		return nil
	})
}

// nodeSameDatabase returns ErrConflict when a node other than except (or the
// control database) names the same address and database as dsn. It locks the
// registry's rows, so two registrations of one database cannot both pass.
func (s *Nodes) nodeSameDatabase(ctx context.Context, except int64, dsn string) error {
	if sameDatabase(dsn, s.dsn) {
		return fmt.Errorf("dsn names the control database, which is node %d already: %w", models.PrimaryNodeID, models.ErrConflict)
	}
	var rows []nodeRow
	if err := s.db.WithContext(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Where("dsn_enc IS NOT NULL AND id <> ?", except).Find(&rows).Error; err != nil {
		return fmt.Errorf("read node dsns: %w", err)
	}
	for _, r := range rows {
		plain, err := s.keys.Open(*r.DsnEnc)
		if err != nil {
			return fmt.Errorf("open dsn of node %d: %w", r.ID, err)
		}
		if sameDatabase(dsn, plain) {
			return fmt.Errorf("dsn names the database of node %d (%s): %w", r.ID, r.Name, models.ErrConflict)
		}
	}
	return nil
}

// NodeUpdate changes node id in one transaction: it locks the row, reads it (with
// its queue count) and calls change, which edits the node or returns an error that
// aborts the update; then it writes Name, DSN (sealed; kept NULL for the primary),
// Weight and State. Errors: ErrNotFound, ErrConflict for a taken name or a DSN
// another node names, and change's error.
func (s *Nodes) NodeUpdate(ctx context.Context, id int64, change func(n *models.Node) error) (*models.Node, error) {
	var out *models.Node
	dsnChanged := false
	defer func() {
		if dsnChanged && out != nil {
			s.npool.forget(id) // this process reopens the node with its new DSN
		}
	}()
	err := s.store().WithTx(ctx, func(tx *Store) error {
		row := tx.sql.QueryRowContext(ctx, "SELECT "+nodeColumns+" FROM db_nodes n WHERE n.id = ? FOR UPDATE", id)
		n, err := tx.Nodes().scanNode(row)
		if err != nil {
			return notFound(err, fmt.Sprintf("node %d", id))
		}
		before := n.DSN
		if err := change(n); err != nil {
			return err
		}
		upd := map[string]any{"name": n.Name, "weight": n.Weight, "state": string(n.State), "updated_at": time.Now().UTC()}
		if n.ID != models.PrimaryNodeID && n.DSN != before {
			if err := tx.Nodes().nodeSameDatabase(ctx, n.ID, n.DSN); err != nil {
				return err
			}
			upd["dsn_enc"] = tx.keys.Seal(n.DSN)
			n.DSNMasked = MaskDSN(n.DSN)
			dsnChanged = true
		}
		if err := tx.db.WithContext(ctx).Model(&nodeRow{}).Where("id = ?", id).Updates(upd).Error; err != nil {
			if isDuplicate(err) {
				return fmt.Errorf("node %q: %w", n.Name, models.ErrConflict)
			}
			return fmt.Errorf("update node %d: %w", id, err)
		}
		out = n
		return nil
	})
	return out, err
}

// placeQueues places n new queues (models.PlaceQueues) among the read-write nodes,
// locking their registry rows in share mode until the caller's transaction ends, so
// a concurrent retirement waits for the queues to exist and then counts them. The
// caller creates each queue's table on its node (queueTableCreate).
func (s *Nodes) placeQueues(ctx context.Context, n int) ([]int64, error) {
	rows, err := s.sql.QueryContext(ctx, "SELECT n.id, n.state, n.weight, (SELECT COUNT(*) FROM queues q WHERE q.node_id = n.id AND q.state <> 'retired') FROM db_nodes n WHERE n.state = ? ORDER BY n.id LOCK IN SHARE MODE", string(models.NodeReadWrite))
	if err != nil {
		return nil, fmt.Errorf("read node loads: %w", err)
	}
	defer rows.Close()
	var loads []models.NodeLoad
	for rows.Next() {
		var l models.NodeLoad
		var state string
		if err := rows.Scan(&l.ID, &state, &l.Weight, &l.Queues); err != nil {
			return nil, fmt.Errorf("scan node load: %w", err)
		}
		l.State = models.NodeState(state)
		loads = append(loads, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read node loads: %w", err)
	}
	placed, err := models.PlaceQueues(loads, n)
	if err != nil {
		return nil, fmt.Errorf("place %d queues: %w", n, err)
	}
	return placed, nil
}

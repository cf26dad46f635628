package control

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

// NodeProbeTimeout bounds the connection check of a node's DSN (10 s).
const NodeProbeTimeout = 10 * time.Second

// NodeSpec registers a db node. Name matches models.ValidName; DSN is a
// go-sql-driver DSN naming a database (at most models.MaxNodeDSNBytes); Weight is
// its share of new queues, 1 to models.MaxNodeWeight (0: models.DefaultNodeWeight);
// State is read-only (the default: the node takes no queues until it is made
// read-write) or read-write (it takes new queues by weight at once).
type NodeSpec struct {
	Name   string
	DSN    string
	Weight int
	State  models.NodeState
}

// NodePatch changes a node; nil fields stay. See NodeSpec for each field's rule.
type NodePatch struct {
	Name   *string
	DSN    *string
	Weight *int
	State  *models.NodeState
}

// stateRefusal says why state cannot be asked of node id ("" when it can):
// draining has its own action (DrainNode); the primary (the control database)
// keeps read-write.
func stateRefusal(id int64, s models.NodeState) string {
	switch {
	case !s.Valid():
		return "must be one of read-write, read-only, draining, retired"
	case s == models.NodeDraining:
		return "draining moves the node's topics: use POST /api/v1/nodes/{id}/drain (herald node drain)"
	case id == models.PrimaryNodeID && s != models.NodeReadWrite:
		return "node 1 is the control database and stays read-write until another node can take its writes"
	}
	return ""
}

func validNodeName(v *models.ValidationError, name string) {
	if !models.ValidName(name) {
		v.Add("/name", "must match ^[a-z0-9][a-z0-9._-]{0,119}$")
	}
}

func validNodeWeight(v *models.ValidationError, w int) {
	if w < 1 || w > models.MaxNodeWeight {
		v.Add("/weight", fmt.Sprintf("must be between 1 and %d", models.MaxNodeWeight))
	}
}

func validNodeDSN(v *models.ValidationError, dsn string) {
	switch {
	case strings.TrimSpace(dsn) == "":
		v.Add("/dsn", "a DSN such as user:password@tcp(host:3306)/herald is required")
	case len(dsn) > models.MaxNodeDSNBytes:
		v.Add("/dsn", fmt.Sprintf("at most %d bytes", models.MaxNodeDSNBytes))
	default:
		if why := store.NodeDSNRefusal(dsn); why != "" {
			v.Add("/dsn", why)
		}
	}
}

// probeNode connects to dsn (NodeProbeTimeout) and returns a *models.ValidationError
// on /dsn when the server cannot be reached, lacks the database or has
// auto_increment_increment other than 1.
func probeNode(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, NodeProbeTimeout)
	defer cancel()
	if _, err := store.NodeProbe(ctx, dsn); err != nil {
		var v models.ValidationError
		v.Add("/dsn", "the node did not pass its check: "+err.Error())
		return &v
	}
	return nil
}

// CreateNode validates spec, connects to its DSN (probeNode), stores the node with
// its DSN sealed and audits node.create (DSN masked). Errors: a
// *models.ValidationError on /name, /dsn, /weight or /state; models.ErrConflict for
// a taken name or a database another node (or the control database) already is.
func (c *Control) CreateNode(ctx context.Context, a Actor, spec NodeSpec) (*models.Node, error) {
	if spec.Weight == 0 {
		spec.Weight = models.DefaultNodeWeight
	}
	if spec.State == "" {
		spec.State = models.NodeReadOnly
	}
	var v models.ValidationError
	validNodeName(&v, spec.Name)
	validNodeDSN(&v, spec.DSN)
	validNodeWeight(&v, spec.Weight)
	if spec.State == models.NodeRetired {
		v.Add("/state", "a new node cannot start retired")
	} else if why := stateRefusal(0, spec.State); why != "" {
		v.Add("/state", why)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := probeNode(ctx, spec.DSN); err != nil {
		return nil, err
	}
	n := &models.Node{Name: spec.Name, DSN: spec.DSN, Weight: spec.Weight, State: spec.State}
	if err := c.st.Nodes().NodeCreate(ctx, n); err != nil {
		return nil, err
	}
	c.Record(ctx, a, "node.create", n.Name, nil, recordOfNode(n))
	return n, nil
}

// PatchNode changes node id's name, DSN (checked by connecting, as CreateNode),
// weight or state and audits node.update (DSNs masked). A retired node cannot change
// (models.ErrConflict); retiring refuses while queues are placed on the node
// (models.ErrInUse: delete or move their topics first); node 1's DSN is
// HERALD_MYSQL_DSN and cannot be set here. Errors: models.ErrNotFound, a
// *models.ValidationError on the field at fault, models.ErrConflict.
func (c *Control) PatchNode(ctx context.Context, a Actor, id int64, p NodePatch) (*models.Node, error) {
	var v models.ValidationError
	if p.Name != nil {
		validNodeName(&v, *p.Name)
	}
	if p.Weight != nil {
		validNodeWeight(&v, *p.Weight)
	}
	if p.State != nil {
		if why := stateRefusal(id, *p.State); why != "" {
			v.Add("/state", why)
		}
	}
	if p.DSN != nil {
		if id == models.PrimaryNodeID {
			v.Add("/dsn", "node 1 is the control database, reached with HERALD_MYSQL_DSN")
		} else {
			validNodeDSN(&v, *p.DSN)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if p.DSN != nil {
		if err := probeNode(ctx, *p.DSN); err != nil {
			return nil, err
		}
	}
	var before map[string]any
	n, err := c.st.Nodes().NodeUpdate(ctx, id, func(n *models.Node) error {
		if n.State == models.NodeRetired {
			return fmt.Errorf("node %d is retired and cannot change: %w", id, models.ErrConflict)
		}
		before = recordOfNode(n)
		if p.Name != nil {
			n.Name = *p.Name
		}
		if p.DSN != nil {
			n.DSN = *p.DSN
		}
		if p.Weight != nil {
			n.Weight = *p.Weight
		}
		if p.State != nil {
			if *p.State == models.NodeRetired && n.Queues > 0 {
				return fmt.Errorf("node %d holds %d queues; delete or move their topics before retiring it: %w", id, n.Queues, models.ErrInUse)
			}
			n.State = *p.State
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.Record(ctx, a, "node.update", n.Name, before, recordOfNode(n))
	return n, nil
}

// GetNode returns node id with its masked DSN and queue count, or models.ErrNotFound.
func (c *Control) GetNode(ctx context.Context, id int64) (*models.Node, error) {
	n, err := c.st.Nodes().NodeGet(ctx, id)
	if err != nil {
		return nil, err
	}
	c.withHealth([]*models.Node{n})
	return n, nil
}

// ListNodes returns one page of db nodes in id order, retired ones included, each
// with its Health as this process sees it.
func (c *Control) ListNodes(ctx context.Context, p PageRequest) (Page[*models.Node], error) {
	ns, err := c.st.Nodes().NodeList(ctx, p.After, p.Limit)
	if err != nil {
		return Page[*models.Node]{}, err
	}
	c.withHealth(ns)
	return pageOf(ns, p.Limit, func(n *models.Node) int64 { return n.ID }), nil
}

// withHealth fills each node's Health from the store's probes: a retired node, or
// one not probed yet, reads models.NodeUnknown.
func (c *Control) withHealth(ns []*models.Node) {
	hs := c.st.Nodes().NodesHealth()
	for _, n := range ns {
		h, ok := hs[n.ID]
		if !ok || n.State == models.NodeRetired {
			h = models.NodeHealth{Node: n.ID, State: models.NodeUnknown}
		}
		if h.State == models.NodeDown && !c.st.Nodes().NodeIsDown(n.ID) {
			h = models.NodeHealth{Node: n.ID, State: models.NodeUnknown} // a stale mark in a process without probes
		}
		n.Health = h
	}
}

// NodesDown lists the db nodes this process sees down, in id order, with since
// when and their last error: what every view spanning nodes could not read.
func (c *Control) NodesDown() []models.NodeHealth { return c.st.Nodes().NodesDown() }

// recordOfNode is a node as the audit log shows it: never the DSN's password.
func recordOfNode(n *models.Node) map[string]any {
	return map[string]any{"id": n.ID, "name": n.Name, "dsn": n.DSNMasked, "weight": n.Weight, "state": n.State}
}

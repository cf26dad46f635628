package control

import (
	"context"
	"strconv"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// APIKeySpec creates a publisher key: Name is a label of 1 to 120 bytes without
// control characters; Topics lists at least one topic name or pattern (`*` stands
// for any run of characters, e.g. orders.*).
type APIKeySpec struct {
	Name   string
	Topics []string
}

// Validate returns a *models.ValidationError on /name or /topics/<i>.
func (s APIKeySpec) Validate() error {
	var v models.ValidationError
	if s.Name == "" || len(s.Name) > 120 || !models.ValidLabel(s.Name) {
		v.Add("/name", "names are 1 to 120 bytes without control characters")
	}
	if len(s.Topics) == 0 {
		v.Add("/topics", "list at least one topic name or pattern such as orders.*")
	}
	for i, p := range s.Topics {
		if !models.ValidTopicPattern(p) {
			v.Add("/topics/"+strconv.Itoa(i), "a topic name where * stands for any run of characters")
		}
	}
	return v.Err()
}

// CreateAPIKey validates spec, stores a new key (only its SHA-256) and audits it
// (apikey.create, subject the key's prefix). It returns the key itself, which is
// shown once and never again, and the stored record. Errors: a
// *models.ValidationError.
func (c *Control) CreateAPIKey(ctx context.Context, a Actor, spec APIKeySpec) (string, *models.APIKey, error) {
	if err := spec.Validate(); err != nil {
		return "", nil, err
	}
	key, prefix, hash := auth.NewAPIKey()
	k := &models.APIKey{Name: spec.Name, Prefix: prefix, Hash: hash, Topics: spec.Topics}
	if err := c.st.Accounts().APIKeyCreate(ctx, k); err != nil {
		return "", nil, err
	}
	c.Record(ctx, a, "apikey.create", prefix, nil, map[string]any{"name": k.Name, "topics": k.Topics})
	return key, k, nil
}

// RevokeAPIKey revokes key id: at once where OnKeyRevoke hooks drop it from a cache,
// within the 5 s key cache on every other api instance. Audited as
// apikey.revoke. Revoking twice keeps the first time. Errors: models.ErrNotFound.
func (c *Control) RevokeAPIKey(ctx context.Context, a Actor, id int64) (*models.APIKey, error) {
	k, err := c.st.Accounts().APIKeyRevoke(ctx, id)
	if err != nil {
		return nil, err
	}
	c.onKeyRevoke.run(k.Prefix)
	c.Record(ctx, a, "apikey.revoke", k.Prefix, map[string]any{"name": k.Name}, map[string]any{"revoked_at": k.RevokedAt})
	return k, nil
}

// ListAPIKeys returns one page of API keys in id order, revoked ones included.
func (c *Control) ListAPIKeys(ctx context.Context, p PageRequest) (Page[*models.APIKey], error) {
	ks, err := c.st.Accounts().APIKeyList(ctx, p.After, p.Limit)
	if err != nil {
		return Page[*models.APIKey]{}, err
	}
	return pageOf(ks, p.Limit, func(k *models.APIKey) int64 { return k.ID }), nil
}

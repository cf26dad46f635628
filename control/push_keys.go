package control

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/pushauth"
	"github.com/heraldhq/herald/models"
)

// PushKeysJWKS returns the public push keys as the JWKS served at
// /.well-known/jwks.json: the signing key and retired keys whose tokens may still be
// valid. It creates the first key when there is none, so the document never starts
// empty.
func (c *Control) PushKeysJWKS(ctx context.Context) (pushauth.JWKS, error) {
	if _, err := c.st.Accounts().PushKeyEnsure(ctx, pushauth.NewKey()); err != nil {
		return pushauth.JWKS{}, err
	}
	keys, err := c.st.Accounts().PushKeyPublished(ctx)
	if err != nil {
		return pushauth.JWKS{}, err
	}
	return pushauth.PublicJWKS(keys), nil
}

// PushKeyRotation is the outcome of RotatePushKey: the new signing key's id and the
// ids still published (the new key first).
type PushKeyRotation struct {
	KeyID     string   `json:"kid"`
	Published []string `json:"published"`
}

// RotatePushKey makes a new push-token signing key. The old one stops signing (workers
// switch within 5 s) and stays in the JWKS for models.PushTokenLifetime +
// models.PushKeyCacheSlack, so tokens it signed keep verifying until they expire.
// Audited as push_key.rotate (key ids only).
func (c *Control) RotatePushKey(ctx context.Context, a Actor) (PushKeyRotation, error) {
	k := pushauth.NewKey()
	if err := c.st.Accounts().PushKeyRotate(ctx, k); err != nil {
		return PushKeyRotation{}, err
	}
	keys, err := c.st.Accounts().PushKeyPublished(ctx)
	if err != nil {
		return PushKeyRotation{}, err
	}
	out := PushKeyRotation{KeyID: k.ID}
	for _, pk := range keys {
		out.Published = append(out.Published, pk.ID)
	}
	c.Record(ctx, a, "push_key.rotate", k.ID, nil, out)
	return out, nil
}

// pushToken signs a push token for a test send to g, with the current push key.
func (c *Control) pushToken(ctx context.Context, g *models.Group, id string, now time.Time) (string, error) {
	k, err := c.st.Accounts().PushKeyEnsure(ctx, pushauth.NewKey())
	if err != nil {
		return "", err
	}
	s, err := pushauth.NewSigner(k, c.issuer)
	if err != nil {
		return "", err
	}
	return s.Sign(g.PushAudience(), g.Name, id, now)
}

package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/pushauth"
)

// pushKeyTTL is how long a worker signs with its copy of the current push key; a
// rotation reaches every worker within it (well under models.PushKeyCacheSlack).
const pushKeyTTL = 5 * time.Second

// pushSigners caches the signer of Herald's current push key.
type pushSigners struct {
	mu       sync.Mutex
	signer   *pushauth.Signer
	loadedAt time.Time
}

// pushSigner returns a signer for the current push key, creating the first key when
// the installation has none yet.
func (w *Worker) pushSigner(ctx context.Context) (*pushauth.Signer, error) {
	w.push.mu.Lock()
	defer w.push.mu.Unlock()
	if w.push.signer != nil && time.Since(w.push.loadedAt) < pushKeyTTL {
		return w.push.signer, nil
	}
	k, err := w.st.PushKeyEnsure(ctx, pushauth.NewKey())
	if err != nil {
		return nil, fmt.Errorf("load push key: %w", err)
	}
	s, err := pushauth.NewSigner(k, w.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	w.push.signer, w.push.loadedAt = s, time.Now()
	return s, nil
}

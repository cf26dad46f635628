package dispatcher

import (
	"errors"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/internal/bus"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models/store"
)

// Deps are what New builds a Dispatcher from. Store, Redis, Jobs and Log are
// required; Now may be nil (time.Now).
type Deps struct {
	Config config.Dispatcher
	Keys   delivery.Keys
	Store  *store.Store
	Redis  redis.UniversalClient
	Jobs   bus.Jobs // where jobs go and whether one is still held (internal/bus)
	Log    *slog.Logger
	Now    Clock
}

// check names the first missing dependency.
func (d Deps) check() error {
	switch {
	case d.Store == nil:
		return errors.New("dispatcher: no store")
	case d.Redis == nil:
		return errors.New("dispatcher: no Redis client")
	case d.Jobs == nil:
		return errors.New("dispatcher: no job bus")
	case d.Log == nil:
		return errors.New("dispatcher: no logger")
	}
	return nil
}

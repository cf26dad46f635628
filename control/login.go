package control

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// Login errors: both read the same for every username, known or not, so an answer
// never tells whether an account exists.
var (
	// ErrLoginThrottled wraps models.ErrRateLimited: too many attempts for the name
	// and client IP (5, then one per 12 s) or for the IP (30, then one per second).
	ErrLoginThrottled = fmt.Errorf("%w: too many login attempts; wait a minute", models.ErrRateLimited)
	// ErrLoginWrong wraps models.ErrUnauthorized: the name or the password is wrong.
	ErrLoginWrong = fmt.Errorf("%w: wrong username or password", models.ErrUnauthorized)
)

// passwordChecks counts bcrypt comparisons, so tests can see that an unknown name
// costs the same work as a known one.
var passwordChecks atomic.Int64

// PasswordChecks returns how many bcrypt comparisons Login has made in this process.
func PasswordChecks() int64 { return passwordChecks.Load() }

// Login is the password check every transport shares (REST login, console sign-in).
// A name longer than models.MaxUsernameBytes, or a password over 1 KiB, is refused
// before anything else (it cannot exist, and nothing of it is kept); every other
// attempt spends one try of the login throttle (bounded LRU tables keyed by the
// normalised name and the client IP, and a slower lane per account for addresses
// that have not signed in to it: see loginThrottle) and exactly one bcrypt comparison, against the
// user's hash or a dummy one, and wrong names and wrong passwords get the same
// answer. Names that models.ValidUsername refuses (padding, control characters)
// never match a user. Errors: ErrLoginThrottled, ErrLoginWrong, or the store's
// error when the database fails.
func (c *Control) Login(ctx context.Context, name, password, clientIP string) (*models.User, error) {
	if len(name) > models.MaxUsernameBytes || len(password) > 1024 {
		return nil, ErrLoginWrong
	}
	if !c.logins.allow(name, clientIP) {
		return nil, ErrLoginThrottled
	}
	var u *models.User
	hash := c.dummyHash()
	if models.ValidUsername(name) {
		got, err := c.st.Accounts().UserGetByUsername(ctx, name)
		switch {
		case err == nil:
			u, hash = got, got.PasswordHash
		case !errors.Is(err, models.ErrNotFound):
			return nil, err
		}
	}
	passwordChecks.Add(1)
	if !auth.CheckPassword(hash, password) || u == nil {
		return nil, ErrLoginWrong
	}
	c.logins.succeeded(name, clientIP)
	return u, nil
}

// dummyHashes holds, per bcrypt cost, the hash compared against when no user has the
// submitted name, so unknown and known names take one comparison each.
var dummyHashes sync.Map // cost → string

func (c *Control) dummyHash() string {
	if h, ok := dummyHashes.Load(c.cost); ok {
		return h.(string)
	}
	h, _ := auth.HashPassword("herald: no such user", c.cost)
	dummyHashes.Store(c.cost, h)
	return h
}

package control

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"

	"github.com/heraldhq/herald/models"
)

// Login throttle sizes, per api instance:
//   - a name and client IP may try 5 times, then once every 12 s;
//   - one client IP may try 30 times, then once a second, whatever the names;
//   - one account (the name, from every address that has not signed in to it
//     before) may be tried 10 times, then once every 30 s: guesses spread over many
//     addresses share this slow lane, so 32 addresses get about 10 guesses, not 160;
//   - an address that signed in to the account successfully (remembered in
//     loginKnownEntries) skips the account lane and keeps only its own name-and-IP
//     lane, so an attack from elsewhere never locks the user out where they work
//     (OWASP Authentication Cheat Sheet: throttle per account without letting an
//     attacker lock it; a known client keeps its own lane, as its device cookies).
//
// Each table keeps at most loginThrottleEntries limiters (≈ 3 MiB), least recently
// used first out; a limiter idle for a few minutes is full again, so forgetting it
// loses nothing, and evicting a busy one takes 10,000 other keys (300 client IPs) in
// a minute.
const (
	loginThrottleEntries = 10_000
	loginKnownEntries    = 10_000
	loginAccountBurst    = 10
	loginAccountEvery    = 30 * time.Second
)

// loginThrottle bounds password guessing without growing with what clients send:
// limiters are keyed by models.UsernameKey (at most MaxUsernameBytes) and client IP,
// in bounded LRU tables (hashicorp/golang-lru's simplelru, which starts no
// goroutine, unlike its expirable variant). Safe for concurrent use.
type loginThrottle struct {
	mu        sync.Mutex
	byName    *lru.LRU[string, *rate.Limiter] // name and IP
	byIP      *lru.LRU[string, *rate.Limiter]
	byAccount *lru.LRU[string, *rate.Limiter] // name, from addresses not known for it
	known     *lru.LRU[string, struct{}]      // name and IP that signed in
}

func newLoginThrottle() *loginThrottle {
	byName, _ := lru.NewLRU[string, *rate.Limiter](loginThrottleEntries, nil)
	byIP, _ := lru.NewLRU[string, *rate.Limiter](loginThrottleEntries, nil)
	byAccount, _ := lru.NewLRU[string, *rate.Limiter](loginThrottleEntries, nil)
	known, _ := lru.NewLRU[string, struct{}](loginKnownEntries, nil)
	return &loginThrottle{byName: byName, byIP: byIP, byAccount: byAccount, known: known}
}

// allow spends one attempt of ip, then of (name, ip), then (unless ip signed in to
// name before) of the account's lane; false means answer 429. A refusal spends
// nothing of the later lanes, so attempts an address's own lanes refuse never drain
// the account's. name must already be at most MaxUsernameBytes long.
func (t *loginThrottle) allow(name, ip string) bool {
	now := time.Now()
	account := models.UsernameKey(name)
	pair := account + "\x00" + ip
	t.mu.Lock()
	defer t.mu.Unlock()
	if !limiterFor(t.byIP, ip, rate.Every(time.Second), 30).AllowN(now, 1) {
		return false
	}
	if !limiterFor(t.byName, pair, rate.Every(12*time.Second), 5).AllowN(now, 1) {
		return false
	}
	if t.known.Contains(pair) {
		return true
	}
	return limiterFor(t.byAccount, account, rate.Every(loginAccountEvery), loginAccountBurst).AllowN(now, 1)
}

// succeeded remembers that ip signed in to name, so its attempts skip the account lane.
func (t *loginThrottle) succeeded(name, ip string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.known.Add(models.UsernameKey(name)+"\x00"+ip, struct{}{})
}

func limiterFor(c *lru.LRU[string, *rate.Limiter], key string, every rate.Limit, burst int) *rate.Limiter {
	if l, ok := c.Get(key); ok {
		return l
	}
	l := rate.NewLimiter(every, burst)
	c.Add(key, l)
	return l
}

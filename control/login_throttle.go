package control

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"

	"github.com/heraldhq/herald/models"
)

// Login throttle sizes. A name and client IP may try 5 times, then once every 12 s;
// one client IP may try 30 times, then once a second, whatever the names. Each
// table keeps at most loginThrottleEntries limiters (≈ 3 MiB), least recently used
// first out; a limiter idle for a minute is full again, so forgetting it loses
// nothing, and evicting a busy one takes 10,000 other keys (300 client IPs) in a minute.
const loginThrottleEntries = 10_000

// loginThrottle bounds password guessing without growing with what clients send:
// limiters are keyed by models.UsernameKey (at most MaxUsernameBytes) and client IP,
// in bounded LRU tables (hashicorp/golang-lru's simplelru, which starts no
// goroutine, unlike its expirable variant). Safe for concurrent use.
type loginThrottle struct {
	mu     sync.Mutex
	byName *lru.LRU[string, *rate.Limiter]
	byIP   *lru.LRU[string, *rate.Limiter]
}

func newLoginThrottle() *loginThrottle {
	byName, _ := lru.NewLRU[string, *rate.Limiter](loginThrottleEntries, nil)
	byIP, _ := lru.NewLRU[string, *rate.Limiter](loginThrottleEntries, nil)
	return &loginThrottle{byName: byName, byIP: byIP}
}

// allow spends one attempt of (name, ip) and of ip; false means answer 429. name
// must already be at most MaxUsernameBytes long.
func (t *loginThrottle) allow(name, ip string) bool {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	ipLim := limiterFor(t.byIP, ip, rate.Every(time.Second), 30)
	nameLim := limiterFor(t.byName, models.UsernameKey(name)+"\x00"+ip, rate.Every(12*time.Second), 5)
	return ipLim.AllowN(now, 1) && nameLim.AllowN(now, 1)
}

func limiterFor(c *lru.LRU[string, *rate.Limiter], key string, every rate.Limit, burst int) *rate.Limiter {
	if l, ok := c.Get(key); ok {
		return l
	}
	l := rate.NewLimiter(every, burst)
	c.Add(key, l)
	return l
}

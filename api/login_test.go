package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/config"
	"github.com/heraldhq/herald/models"
)

// consoleLogin posts the console's sign-in form and returns the status.
func consoleLogin(t *testing.T, h *heraldtest.Herald, form url.Values) int {
	t.Helper()
	req, err := http.NewRequest("POST", h.BaseURL+"/console/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestLoginMemoryBounded sends sign-ins with huge unique usernames: the console
// refuses oversized forms with 413, and nothing of the names stays in memory. Not
// parallel: it reads this process's heap.
func TestLoginMemoryBounded(t *testing.T) {
	h := heraldtest.StartHerald(t, nil)
	before := heapInUse()
	for i := range 24 {
		name := fmt.Sprintf("%d-%s", i, strings.Repeat("u", 4<<20))
		require.Equal(t, http.StatusRequestEntityTooLarge, consoleLogin(t, h, url.Values{"username": {name}, "password": {"x"}}))
	}
	for i := range 200 {
		name := fmt.Sprintf("%d-%s", i, strings.Repeat("v", 60<<10))
		code, body, _ := h.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": name, "password": "x"})
		require.Equal(t, http.StatusUnauthorized, code, string(body))
	}
	grown := int64(heapInUse()) - int64(before)
	require.Less(t, grown, int64(16<<20), "heap grew by %d bytes", grown)
}

// TestLoginPaddingSharesThrottle: trailing spaces neither name another account nor
// get a fresh allowance; such names cannot be created either.
func TestLoginPaddingSharesThrottle(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.Token() // signed in before the throttle closes
	for range 7 {
		code, _, _ := h.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": heraldtest.AdminUser, "password": "wrong-password"})
		require.Contains(t, []int{401, 429}, code)
	}
	code, _, _ := h.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": heraldtest.AdminUser, "password": heraldtest.AdminPassword})
	require.Equal(t, http.StatusTooManyRequests, code)
	for _, padded := range []string{"admin ", "admin      ", " admin", "ADMIN"} {
		code, body, _ := h.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": padded, "password": heraldtest.AdminPassword})
		require.Equal(t, http.StatusTooManyRequests, code, "%q: %s", padded, body)
		require.Equal(t, http.StatusTooManyRequests, consoleLogin(t, h, url.Values{"username": {padded}, "password": {heraldtest.AdminPassword}}), padded)
	}
	for _, bad := range []string{"bob ", " bob", "bob\t"} {
		h.Admin("POST", "/users", map[string]string{"username": bad, "password": "long-enough-pw"}, 422)
	}
	hash, err := auth.HashPassword("long-enough-pw", 4)
	require.NoError(t, err)
	err = h.Store.Accounts().UserCreate(context.Background(), &models.User{Username: "carol ", PasswordHash: hash, Role: models.RoleViewer})
	require.ErrorIs(t, err, models.ErrInvalid, "the store refuses padded names from every path")
	h.Admin("POST", "/users", map[string]string{"username": "bob", "password": "long-enough-pw"}, 201)
	var n int
	require.NoError(t, h.Store.DB().QueryRow("SELECT COUNT(*) FROM users WHERE username = 'bob   '").Scan(&n))
	require.Zero(t, n, "usernames compare without padding")
}

// TestLoginEqualWork: an unknown username costs one bcrypt comparison, like a known
// one, and gets the same answer. Not parallel: it counts this process's comparisons.
func TestLoginEqualWork(t *testing.T) {
	h := heraldtest.StartHerald(t, nil)
	answers := map[string]string{}
	for _, name := range []string{heraldtest.AdminUser, "nobody-by-this-name"} {
		before := api.PasswordChecks()
		code, body, _ := h.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": name, "password": "wrong-password"})
		require.Equal(t, http.StatusUnauthorized, code)
		require.Equal(t, int64(1), api.PasswordChecks()-before, name)
		answers[name] = string(body)
	}
	require.Equal(t, answers[heraldtest.AdminUser], answers["nobody-by-this-name"])
}

// TestAPIKeyEqualAnswers: an unknown prefix and a known prefix with a wrong secret
// get byte-identical 401s; a prefix that cannot exist never reaches SQL (no 500).
func TestAPIKeyEqualAnswers(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	h.CreateTopic("orders", 1)
	key := h.CreateAPIKey("orders")
	prefix := strings.Split(key, "_")[1]
	msg := map[string]any{"messages": []any{map[string]any{"body": 1}}}
	_, unknown, _ := h.Do("POST", "/v1/topics/orders/messages", "hk_aaaaaaaa_"+strings.Repeat("b", 52), msg)
	code, wrong, _ := h.Do("POST", "/v1/topics/orders/messages", "hk_"+prefix+"_"+strings.Repeat("b", 52), msg)
	require.Equal(t, 401, code)
	require.Equal(t, string(unknown), string(wrong))
	for _, bad := range []string{"hk_\xc3\xa9_x", "hk_é_x", "hk_ABC_x", "hk_abc _x", "hk_" + strings.Repeat("a", 40) + "_x"} {
		req, err := http.NewRequest("POST", h.BaseURL+"/v1/topics/orders/messages", strings.NewReader(`{"messages":[{"body":1}]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bad)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 401, resp.StatusCode, "%q", bad)
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	}
}

// TestCookieSecure: with HERALD_COOKIE_SECURE every console cookie is Secure, even
// over plain HTTP (TLS ends at a proxy in front).
func TestCookieSecure(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.CookieSecure = true })
	for _, path := range []string{"/console/login"} {
		resp, err := http.Get(h.BaseURL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEmpty(t, resp.Cookies())
		for _, ck := range resp.Cookies() {
			require.True(t, ck.Secure, "%s cookie %s", path, ck.Name)
		}
	}
	req, err := http.NewRequest("POST", h.BaseURL+"/console/login", strings.NewReader(url.Values{"username": {heraldtest.AdminUser}, "password": {heraldtest.AdminPassword}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var session bool
	for _, ck := range resp.Cookies() {
		require.True(t, ck.Secure, "cookie %s", ck.Name)
		session = session || ck.Name == "herald_session"
	}
	require.True(t, session, "signed in")
}

// loginFrom posts a REST login from source address ip (a loopback address: Linux
// routes all of 127.0.0.0/8 to lo) and returns the status. The api takes the client
// IP from the connection (echo.ExtractIPDirect), so this is what it throttles on.
func loginFrom(t *testing.T, h *heraldtest.Herald, ip, name, password string) int {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
	body, _ := json.Marshal(map[string]string{"username": name, "password": password})
	req, err := http.NewRequest("POST", h.BaseURL+"/api/v1/auth/login", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestLoginThrottlePerAccount guesses one account's password 6 times from each of
// 32 source addresses: the account's slow lane lets about 10 guesses be checked in
// all (the per-address lanes alone let 160 through). The user, signed in before
// from their own address, still signs in from it at once; an address new to the
// account waits in the slow lane.
func TestLoginThrottlePerAccount(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	require.Equal(t, http.StatusOK, loginFrom(t, h, "127.0.0.1", heraldtest.AdminUser, heraldtest.AdminPassword), "the user's own address")
	checked, throttled := 0, 0
	for i := range 32 {
		ip := fmt.Sprintf("127.0.1.%d", i+1)
		for range 6 {
			switch code := loginFrom(t, h, ip, heraldtest.AdminUser, "wrong-password"); code {
			case http.StatusUnauthorized:
				checked++
			case http.StatusTooManyRequests:
				throttled++
			default:
				t.Fatalf("%s: status %d", ip, code)
			}
		}
	}
	require.Equal(t, 192, checked+throttled)
	// The account's burst is 10, less the user's own first sign-in (its address was
	// not known yet), plus one per 30 s of test.
	require.LessOrEqual(t, checked, 11)
	require.GreaterOrEqual(t, checked, 9)
	require.Equal(t, http.StatusOK, loginFrom(t, h, "127.0.0.1", heraldtest.AdminUser, heraldtest.AdminPassword), "the user is not locked out where they signed in before")
	require.Equal(t, http.StatusTooManyRequests, loginFrom(t, h, "127.0.2.1", heraldtest.AdminUser, heraldtest.AdminPassword), "a new address waits in the slow lane")
	require.Equal(t, http.StatusUnauthorized, loginFrom(t, h, "127.0.2.1", "someone-else", "wrong-password"), "other accounts are not slowed")
}

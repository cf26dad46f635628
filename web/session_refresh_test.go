package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/heraldtest"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/config"
)

// TestSessionRefreshedPastHalfLife: a console request with a session token past
// half its life gets a new cookie valid for a full hour; a young token is kept.
func TestSessionRefreshedPastHalfLife(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, nil)
	u, err := h.Store.Accounts().UserGetByUsername(context.Background(), heraldtest.AdminUser)
	require.NoError(t, err)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	session := func(issued time.Time) *http.Cookie {
		tok, _, err := auth.IssueToken([]byte(h.Cfg.JWTSecret), u, issued)
		require.NoError(t, err)
		req, _ := http.NewRequest("GET", h.BaseURL+"/console/", nil)
		req.AddCookie(&http.Cookie{Name: "herald_session", Value: tok})
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		for _, c := range resp.Cookies() {
			if c.Name == "herald_session" {
				return c
			}
		}
		return nil
	}
	require.Nil(t, session(time.Now().Add(-10*time.Minute)), "20 min used of 60: kept")
	ck := session(time.Now().Add(-40 * time.Minute))
	require.NotNil(t, ck, "40 min used of 60: refreshed")
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.WithinDuration(t, time.Now().Add(time.Hour), ck.Expires, 2*time.Second)
	require.False(t, ck.Secure, "plain HTTP without HERALD_COOKIE_SECURE")
	tok, err := auth.ParseToken([]byte(h.Cfg.JWTSecret), ck.Value)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(time.Hour), tok.ExpiresAt, 2*time.Second)
}

// TestSessionRefreshKeepsSecure: with HERALD_COOKIE_SECURE (TLS ends at a proxy) the
// re-issued session cookie is Secure like the login's, so a console open past half
// the token's life never falls back to a cookie sent over plain HTTP.
func TestSessionRefreshKeepsSecure(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHerald(t, func(c *config.Config) { c.CookieSecure = true })
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cookie := func(resp *http.Response) *http.Cookie {
		for _, c := range resp.Cookies() {
			if c.Name == "herald_session" {
				return c
			}
		}
		return nil
	}
	form := url.Values{"username": {heraldtest.AdminUser}, "password": {heraldtest.AdminPassword}}
	req, err := http.NewRequest("POST", h.BaseURL+"/console/login", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	login := cookie(resp)
	require.NotNil(t, login)
	require.True(t, login.Secure, "the login's cookie")

	u, err := h.Store.Accounts().UserGetByUsername(context.Background(), heraldtest.AdminUser)
	require.NoError(t, err)
	old, _, err := auth.IssueToken([]byte(h.Cfg.JWTSecret), u, time.Now().Add(-40*time.Minute))
	require.NoError(t, err)
	req, _ = http.NewRequest("GET", h.BaseURL+"/console/", nil)
	req.AddCookie(&http.Cookie{Name: "herald_session", Value: old})
	resp, err = noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	refreshed := cookie(resp)
	require.NotNil(t, refreshed, "40 min used of 60: refreshed")
	require.True(t, refreshed.Secure, "the re-issued cookie")
	require.True(t, refreshed.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, refreshed.SameSite)
}

package web

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// Console cookies: the session holds the same JWT as the API (HttpOnly,
// SameSite=Strict, path /console, auth.TokenTTL); the flash carries one notice to the
// next page after a redirect.
const (
	sessionCookie = "herald_session"
	flashCookie   = "herald_flash"
	consolePath   = "/console"
)

var consolePages = sync.OnceValues(ParsePages)

// pageData is what every console template gets: the signed-in user, the CSRF token
// for forms, a notice or error line and the page's own data in Page.
type pageData struct {
	Title      string
	Nav        string
	User       *models.User
	CSRF       string
	Notice     string
	Error      string
	CanOperate bool
	IsAdmin    bool
	Page       any
}

// consoleUser returns the signed-in user, or nil on the login page.
func consoleUser(c echo.Context) *models.User {
	u, _ := c.Get("user").(*models.User)
	return u
}

// render writes a console page with security headers: a strict CSP (no inline
// script or style), no framing, no caching.
// liveHeader marks a request from console.js for a page's live block only, and the
// answer that holds just that block (RenderLive); any other answer (a login page
// after the session ended, an error page) is not swapped in.
const liveHeader = "X-Herald-Live"

func (s *Console) render(c echo.Context, status int, page, nav, title string, data any, notice, errLine string) error {
	u := consoleUser(c)
	csrf, _ := c.Get("csrf").(string)
	pd := pageData{Title: title, Nav: nav, User: u, CSRF: csrf, Notice: notice, Error: errLine, Page: data}
	if u != nil {
		pd.CanOperate = u.Role.AtLeast(models.RoleOperator)
		pd.IsAdmin = u.Role == models.RoleAdmin
	}
	if pd.Notice == "" {
		pd.Notice = takeFlash(c)
	}
	pages, err := consolePages()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	h := c.Response().Header()
	live := false
	if c.Request().Method == http.MethodGet && status == http.StatusOK && c.Request().Header.Get(liveHeader) == "1" {
		if live, err = pages.RenderLive(&buf, page, pd); err != nil {
			return err
		}
		if live {
			h.Set(liveHeader, "1")
		}
	}
	if !live {
		if err := pages.Render(&buf, page, pd); err != nil {
			return err
		}
	}
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// consolePage wraps a console handler so its errors render as HTML pages instead of
// problem+json: 401 goes to the login page, others show the problem's title.
func (s *Console) consolePage(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := h(c)
		if err == nil || c.Response().Committed {
			return err
		}
		status, title, detail := describe(err)
		if status == http.StatusUnauthorized {
			return c.Redirect(http.StatusSeeOther, consolePath+"/login")
		}
		if status >= 500 {
			s.log.Error("console request failed", "path", c.Path(), "err", err)
		}
		if detail == "" || status >= 500 {
			detail = title
		}
		return s.render(c, status, "error", "", title, map[string]string{"Detail": detail}, "", "")
	}
}

// requireSession authenticates console requests from the session cookie; without a
// valid one the browser is sent to the login page.
func (s *Console) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ck, err := c.Cookie(sessionCookie)
		if err == nil && ck.Value != "" {
			if u, err := s.ctl.Authenticate(c.Request().Context(), ck.Value); err == nil {
				c.Set("user", u)
				s.refreshSession(c, ck.Value, u)
				return next(c)
			}
		}
		target := consolePath + "/login"
		if c.Request().Method == http.MethodGet {
			target += "?next=" + url.QueryEscape(c.Request().URL.RequestURI())
		}
		return c.Redirect(http.StatusSeeOther, target)
	}
}

// requireConsoleRole refuses console actions below role r with a 403 page.
func requireConsoleRole(r models.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if u := consoleUser(c); u == nil || !u.Role.AtLeast(r) {
				return failure(http.StatusForbidden, "this needs role "+string(r))
			}
			return next(c)
		}
	}
}

type loginPage struct {
	Next     string
	Username string
}

func (s *Console) consoleLoginForm(c echo.Context) error {
	return s.render(c, http.StatusOK, "login", "", "Sign in", loginPage{Next: safeNext(c.QueryParam("next"))}, "", "")
}

// consoleLogin checks the password like the API's login (control.Login: one throttle
// and one bcrypt comparison for every name) and sets the session cookie.
func (s *Console) consoleLogin(c echo.Context) error {
	name, pw := c.FormValue("username"), c.FormValue("password")
	page := loginPage{Next: safeNext(c.FormValue("next"))}
	if len(name) <= models.MaxUsernameBytes {
		page.Username = name
	}
	u, err := s.ctl.Login(c.Request().Context(), name, pw, c.RealIP())
	if errors.Is(err, control.ErrLoginThrottled) {
		return s.render(c, http.StatusTooManyRequests, "login", "", "Sign in", page, "", "Too many sign-in attempts; wait a minute.")
	} else if errors.Is(err, control.ErrLoginWrong) {
		return s.render(c, http.StatusUnauthorized, "login", "", "Sign in", page, "", "Wrong username or password.")
	} else if err != nil {
		return err
	}
	tok, exp, err := s.ctl.IssueToken(u)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: tok, Path: consolePath, Expires: exp, HttpOnly: true,
		Secure: secureCookie(c), SameSite: http.SameSiteStrictMode})
	c.Set("user", u)
	s.ctl.Record(c.Request().Context(), actorOf(c), "user.login", u.Username, nil, map[string]string{"via": "console"})
	next := page.Next
	if next == "" {
		next = consolePath + "/"
	}
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Console) consoleLogout(c echo.Context) error {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: consolePath, MaxAge: -1, HttpOnly: true, Secure: secureCookie(c), SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, consolePath+"/login")
}

// cookieSecureKey marks, in a console request's context, that cookies must be Secure
// (HERALD_COOKIE_SECURE).
const cookieSecureKey = "cookie_secure"

// markCookies records HERALD_COOKIE_SECURE on each console request for secureCookie.
func (s *Console) markCookies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(cookieSecureKey, s.cookieSecure)
		return next(c)
	}
}

// secureCookie reports whether console cookies get the Secure attribute: always
// with HERALD_COOKIE_SECURE (behind a TLS-terminating proxy), else only on a direct
// TLS connection.
func secureCookie(c echo.Context) bool {
	v, _ := c.Get(cookieSecureKey).(bool)
	return v || c.IsTLS()
}

// safeNext keeps only console-local redirect targets (no open redirect).
func safeNext(next string) string {
	if !strings.HasPrefix(next, consolePath+"/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	return next
}

// redirectWith sends the browser to path with a one-time notice.
func redirectWith(c echo.Context, path, notice string) error {
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: url.QueryEscape(notice), Path: consolePath, MaxAge: 60, HttpOnly: true,
		Secure: secureCookie(c), SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, path)
}

func takeFlash(c echo.Context) string {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return ""
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: consolePath, MaxAge: -1, HttpOnly: true, Secure: secureCookie(c), SameSite: http.SameSiteStrictMode})
	v, _ := url.QueryUnescape(ck.Value)
	return v
}

package api

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/models"
)

// errLoginThrottled and errLoginWrong are checkLogin's answers to the client; both
// read the same for every username, known or not.
var (
	errLoginThrottled = problem("rate-limited", "too many login attempts; wait a minute")
	errLoginWrong     = problem("unauthorized", "wrong username or password")
)

// passwordChecks counts bcrypt comparisons, so tests can see that an unknown name
// costs the same work as a known one.
var passwordChecks atomic.Int64

// dummyHash is compared against when no user has the submitted name, so unknown and
// known names take one bcrypt comparison each (made at BcryptCost on first use).
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("herald: no such user"), BcryptCost)
	return h
})

// checkLogin is the password check the API and the console share. A name longer
// than MaxUsernameBytes is refused before anything else (it cannot exist, and
// nothing of it is kept); every other attempt spends one try of the login throttle
// (5 per minute per name and client IP, 30 per IP) and exactly one bcrypt
// comparison, against the user's hash or a dummy one, and wrong names and wrong
// passwords get the same answer. Names that ValidUsername refuses (padding, control
// characters) never match a user. Errors are *Problem values, or the store's error
// when the database fails.
func (s *Server) checkLogin(c echo.Context, name, password string) (*models.User, error) {
	if len(name) > models.MaxUsernameBytes || len(password) > 1024 {
		return nil, errLoginWrong
	}
	if !s.logins.allow(name, c.RealIP()) {
		return nil, errLoginThrottled
	}
	var u *models.User
	hash := dummyHash()
	if models.ValidUsername(name) {
		got, err := s.st.UserGetByUsername(c.Request().Context(), name)
		switch {
		case err == nil:
			u, hash = got, []byte(got.PasswordHash)
		case !errors.Is(err, models.ErrNotFound):
			return nil, err
		}
	}
	passwordChecks.Add(1)
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u == nil {
		return nil, errLoginWrong
	}
	return u, nil
}

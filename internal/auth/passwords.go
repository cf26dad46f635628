package auth

import (
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/models"
)

// DefaultBcryptCost is the bcrypt work factor for new password hashes when none is
// configured (config.Config.BcryptCost, HERALD_BCRYPT_COST). Checking a password
// uses the cost stored in its hash, so changing it never locks users out.
const DefaultBcryptCost = 12

// Password length bounds in bytes; bcrypt reads at most 72.
const (
	PasswordMinBytes = 8
	PasswordMaxBytes = 72
)

// HashPassword returns the bcrypt hash of a user's password at cost (0 means
// DefaultBcryptCost; below bcrypt.MinCost, 4, bcrypt itself uses its default of
// 10). A password outside PasswordMinBytes..PasswordMaxBytes gives a
// *models.ValidationError on /password. Safe for concurrent use.
func HashPassword(pw string, cost int) (string, error) {
	if len(pw) < PasswordMinBytes || len(pw) > PasswordMaxBytes {
		return "", &models.ValidationError{Errors: []models.FieldError{{Pointer: "/password", Detail: "passwords are 8 to 72 bytes"}}}
	}
	if cost == 0 {
		cost = DefaultBcryptCost
	}
	b, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	return string(b), err
}

// CheckPassword reports whether pw matches the bcrypt hash.
func CheckPassword(hash, pw string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw)) == nil
}

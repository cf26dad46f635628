package auth

import (
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/models"
)

// BcryptCost is the bcrypt work factor for new password hashes (default 12). Tests
// lower it; checking a password uses the cost stored in its hash.
var BcryptCost = 12

// HashPassword returns the bcrypt hash of a user's password (BcryptCost). A password
// outside 8 to 72 bytes is a *models.ValidationError on /password.
func HashPassword(pw string) (string, error) {
	if len(pw) < 8 || len(pw) > 72 {
		return "", &models.ValidationError{Errors: []models.FieldError{{Pointer: "/password", Detail: "passwords are 8 to 72 bytes"}}}
	}
	b, err := bcrypt.GenerateFromPassword([]byte(pw), BcryptCost)
	return string(b), err
}

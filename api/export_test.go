package api

import "github.com/heraldhq/herald/control"

// PasswordChecks returns how many bcrypt comparisons logins have made so far.
func PasswordChecks() int64 { return control.PasswordChecks() }

package api

// PasswordChecks returns how many bcrypt comparisons logins have made so far.
func PasswordChecks() int64 { return passwordChecks.Load() }

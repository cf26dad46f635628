package control

import (
	"fmt"
	"strconv"

	"github.com/heraldhq/herald/models"
)

// TimeFormat is how every transport writes a time: RFC 3339 with milliseconds, in UTC.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// ActorOf is who the audit log names for a request: the signed-in user u (nil:
// System), from address sourceIP, over transport via ("console", "cli"; empty for
// the REST API), with u's role (none without a user).
func ActorOf(u *models.User, sourceIP, via string) Actor {
	a := Actor{Username: System.Username, SourceIP: sourceIP, Via: via}
	if u != nil {
		a.Username, a.Role = u.Username, u.Role
	}
	return a
}

// CheckPathNames refuses a :topic or :group path parameter (param returns a
// parameter's value, empty when absent) that cannot name anything
// (models.PossibleName), before any handler looks it up, so that no such byte string
// reaches SQL. The error wraps models.ErrNotFound: every transport answers 404.
func CheckPathNames(param func(name string) string) error {
	for _, p := range [...]string{"topic", "group"} {
		if v := param(p); v != "" && !models.PossibleName(v) {
			return fmt.Errorf("no %s named %s: %w", p, strconv.QuoteToASCII(v), models.ErrNotFound)
		}
	}
	return nil
}

package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"net"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/models"
)

// Unavailable reports whether err means the database did not answer rather than
// refused the statement: a deadline, a broken or timed-out connection, or a server
// error of the "try again" kind (too many connections 1040, lock wait timeout 1205,
// deadlock 1213, server gone 2006/2013, read-only or shutting down 1290/1053). The
// api answers these with 503 and Retry-After instead of 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1040, 1053, 1205, 1213, 1290, 2006, 2013:
			return true
		}
	}
	return false
}

// Unreachable reports whether err means the server could not be reached or stopped
// answering, as opposed to answering with an error: a deadline, a refused, reset or
// broken connection, a server gone (2006, 2013), or models.ErrQueueUnavailable
// from opening a node. A server that answers "too many connections", a lock wait
// timeout or a deadlock is reachable. Node health (NodeFailed) is fed with these.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, models.ErrQueueUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 2006 || me.Number == 2013)
}

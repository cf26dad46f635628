package models

import "errors"

// Sentinel errors of the control plane (topics, groups, users).
var (
	// ErrInUse means the resource is still referenced and cannot be removed, e.g. a
	// topic some group subscribes to.
	ErrInUse = errors.New("still in use")
	// ErrLastAdmin means the change would leave no admin user.
	ErrLastAdmin = errors.New("at least one admin must remain")
)

// Package models holds Herald's domain types, their states, validation rules and
// sentinel errors. It imports the standard library only; models/store persists
// these types and the api, dispatcher and worker packages act on them.
package models

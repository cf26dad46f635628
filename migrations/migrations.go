// Package migrations holds Herald's control-table schema as numbered SQL files
// (NNNNNN_verb_noun.up.sql / .down.sql), embedded in the binary and applied by
// golang-migrate. Queue tables are not here: models/store creates them from one
// fixed DDL when a queue is created.
package migrations

import "embed"

// FS holds every migration file, named for golang-migrate's iofs source.
//
//go:embed *.sql
var FS embed.FS

package main

// commandOperations names, for each command over HTTP, the REST operations it
// calls ("METHOD /path", in api/routes.go's Echo syntax). Every operation of the
// API has a command here: TestEveryAPIOperationHasACommand holds this table to the
// route table, and 'herald <command> --help' shows the line.
var commandOperations = map[string][]string{
	"login":   {"POST /api/v1/auth/login"},
	"refresh": {"POST /api/v1/auth/refresh"},

	"server health":  {"GET /healthz"},
	"server ready":   {"GET /readyz"},
	"server openapi": {"GET /openapi.yaml"},

	"message publish": {"POST /v1/topics/:topic/messages"},
	"message list":    {"GET /api/v1/topics/:topic/messages"},
	"message get":     {"GET /api/v1/messages/:id"},
	"message cancel":  {"DELETE /api/v1/messages/:id"},

	"schedule create": {"POST /api/v1/schedules"},
	"schedule list":   {"GET /api/v1/schedules"},
	"schedule get":    {"GET /api/v1/schedules/:schedule"},
	"schedule patch":  {"GET /api/v1/schedules/:schedule", "PATCH /api/v1/schedules/:schedule"},
	"schedule pause":  {"POST /api/v1/schedules/:schedule/pause"},
	"schedule resume": {"POST /api/v1/schedules/:schedule/resume"},
	"schedule delete": {"DELETE /api/v1/schedules/:schedule"},

	"topic list":   {"GET /api/v1/topics"},
	"topic create": {"POST /api/v1/topics"},
	"topic get":    {"GET /api/v1/topics/:topic"},
	"topic patch":  {"PATCH /api/v1/topics/:topic"},
	"topic delete": {"DELETE /api/v1/topics/:topic"},
	"topic move":   {"POST /api/v1/topics/:topic/move"},

	"group list":          {"GET /api/v1/groups"},
	"group create":        {"POST /api/v1/groups"},
	"group get":           {"GET /api/v1/groups/:group"},
	"group patch":         {"PATCH /api/v1/groups/:group"},
	"group delete":        {"DELETE /api/v1/groups/:group"},
	"group pause":         {"POST /api/v1/groups/:group/pause"},
	"group resume":        {"POST /api/v1/groups/:group/resume"},
	"group stats":         {"GET /api/v1/groups/:group/stats"},
	"group attempts":      {"GET /api/v1/groups/:group/attempts"},
	"group queue-skip":    {"POST /api/v1/groups/:group/queues/:queue/skip"},
	"group queue-resume":  {"POST /api/v1/groups/:group/queues/:queue/resume"},
	"group key-skip":      {"POST /api/v1/groups/:group/blocked-keys/skip"},
	"group key-resume":    {"POST /api/v1/groups/:group/blocked-keys/resume"},
	"group offsets":       {"GET /api/v1/groups/:group/offsets"},
	"group reset":         {"POST /api/v1/groups/:group/offsets/reset"},
	"group rotate-secret": {"POST /api/v1/groups/:group/secret/rotate"},
	"group test":          {"POST /api/v1/groups/:group/test"},
	"group resend":        {"POST /api/v1/groups/:group/messages/:id/resend"},
	"group resend-range":  {"POST /api/v1/groups/:group/resend"},

	"dead-letters list":    {"GET /api/v1/groups/:group/dead-letters"},
	"dead-letters get":     {"GET /api/v1/groups/:group/dead-letters/:id"},
	"dead-letters redrive": {"POST /api/v1/groups/:group/dead-letters/redrive"},
	"dead-letters purge":   {"POST /api/v1/groups/:group/dead-letters/purge"},

	"push-key list":   {"GET /.well-known/jwks.json"},
	"push-key rotate": {"POST /api/v1/push-keys/rotate"},

	"key list":   {"GET /api/v1/api-keys"},
	"key create": {"POST /api/v1/api-keys"},
	"key revoke": {"POST /api/v1/api-keys/:id/revoke"},

	"users list":          {"GET /api/v1/users"},
	"users create":        {"POST /api/v1/users"},
	"users patch":         {"PATCH /api/v1/users/:id"},
	"users delete":        {"DELETE /api/v1/users/:id"},
	"users revoke-tokens": {"POST /api/v1/users/:id/revoke-tokens"},

	"audit-log list": {"GET /api/v1/audit-log"},

	"node list":   {"GET /api/v1/nodes"},
	"node add":    {"POST /api/v1/nodes"},
	"node get":    {"GET /api/v1/nodes/:id"},
	"node patch":  {"PATCH /api/v1/nodes/:id"},
	"node open":   {"PATCH /api/v1/nodes/:id"},
	"node close":  {"PATCH /api/v1/nodes/:id"},
	"node retire": {"PATCH /api/v1/nodes/:id"},
	"node drain":  {"POST /api/v1/nodes/:id/drain"},
}

// httpCommands returns every command over HTTP: login, refresh and each resource's
// commands, from the command table.
func httpCommands() []cliCommand {
	out := []cliCommand{loginCommand, refreshCommand}
	for _, n := range sortedKeys(cliResources) {
		out = append(out, cliResources[n]...)
	}
	return out
}

// commandNames returns the name of every herald command, from the command tables:
// the local ones (localCommands), then those over HTTP.
func commandNames() []string {
	var out []string
	for _, c := range localCommands {
		out = append(out, c.name)
	}
	for _, c := range httpCommands() {
		out = append(out, c.name)
	}
	return out
}

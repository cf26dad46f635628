package client

import "context"

// PushKeyRotation is a push-key rotation's outcome: the new signing key's id and
// the key ids the JWKS still publishes (the new key first).
type PushKeyRotation struct {
	KeyID     string   `json:"kid"`
	Published []string `json:"published"`
}

// RotatePushKey makes a new push-token signing key; the old one stops signing
// within 5 s and stays in the JWKS until the tokens it signed expire. Needs role
// admin. Errors: ErrForbidden.
func (c *Client) RotatePushKey(ctx context.Context) (*PushKeyRotation, error) {
	var r PushKeyRotation
	return &r, c.do(ctx, request{method: "POST", path: "/api/v1/push-keys/rotate"}, &r)
}

// JWK is one public push-token key (RFC 8037 OKP, Ed25519): Kid, and X the
// base64url public key.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	X   string `json:"x"`
}

// PushKeys returns the public keys push tokens are verified with (GET
// /.well-known/jwks.json, no credentials needed).
func (c *Client) PushKeys(ctx context.Context) ([]JWK, error) {
	var set struct {
		Keys []JWK `json:"keys"`
	}
	err := c.do(ctx, request{method: "GET", path: "/.well-known/jwks.json"}, &set)
	return set.Keys, err
}

// Readiness is the api's readiness: Status "ready", and, with more than one db
// node, each node's health by id ("up", or "down: <reason>").
type Readiness struct {
	Status string            `json:"status"`
	Nodes  map[string]string `json:"nodes,omitempty"`
}

// Health reports whether the api process answers (GET /healthz). Errors: a
// transport error when it cannot be reached.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, request{method: "GET", path: "/healthz"}, nil)
}

// Ready reports whether the api can serve: MySQL and Redis answer (GET /readyz),
// with each db node's health. Errors: ErrUnavailable, naming what is down.
func (c *Client) Ready(ctx context.Context) (*Readiness, error) {
	var r Readiness
	return &r, c.do(ctx, request{method: "GET", path: "/readyz"}, &r)
}

// OpenAPI returns the api's OpenAPI 3.1 document, as YAML (GET /openapi.yaml).
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	_, body, err := c.send(ctx, request{method: "GET", path: "/openapi.yaml"}, nil)
	return body, err
}

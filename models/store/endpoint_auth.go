package store

import (
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/models"
)

// pushAuthColumns returns the push_auth_* column values of g.
func pushAuthColumns(g *models.Group) (bool, string) {
	if g.PushAuth == nil {
		return false, ""
	}
	return true, g.PushAuth.Audience
}

// sealEndpointAuth returns the endpoint_auth column for a: NULL when a is empty,
// otherwise its JSON sealed under the primary key (plaintext without one).
func (s *Store) sealEndpointAuth(a models.EndpointAuth) *string {
	if a.Empty() {
		return nil
	}
	b, _ := json.Marshal(a)
	sealed := s.keys.Seal(string(b))
	return &sealed
}

// openEndpointAuth reads an endpoint_auth column back.
func (s *Store) openEndpointAuth(col *string) (models.EndpointAuth, error) {
	var a models.EndpointAuth
	if col == nil || *col == "" {
		return a, nil
	}
	plain, err := s.keys.Open(*col)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(plain), &a); err != nil {
		return a, fmt.Errorf("decode endpoint auth: %w", err)
	}
	return a, nil
}

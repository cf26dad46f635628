package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/internal/aheadcache"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/models"
)

// FuzzPublishDecode feeds arbitrary request bodies to the publish parser
// (decodeStrict, then buildMessages). It must never panic, and whatever it accepts
// must be deliverable as published: valid UTF-8 labels and header values that an
// HTTP header would carry unchanged, a parseable content type.
func FuzzPublishDecode(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"body":{"id":1},"tag":"created","key":"o-1","headers":{"x-a":"1"}}]}`,
		`{"messages":[{"body_base64":"AAEC","content_type":"application/octet-stream"}]}`,
		"{\"messages\":[{\"body\":1,\"tag\":\"\xff\"}]}",
		`{"messages":[{"body":1,"tag":" padded "}]}`,
		`{"messages":[{"body":1,"headers":{"X-Up":"v","x-b":"a\tb"}}]}`,
		`{"messages":[]}`, `{"messages":[{"body":1}]} {}`, `[`, ``,
	} {
		f.Add([]byte(seed))
	}
	s := &Server{}
	e := echo.New()
	topic := &models.Topic{ID: 1, Name: "orders", Queues: []models.Queue{{ID: 1, State: models.QueueReadWrite}, {ID: 2, Position: 1, State: models.QueueReadWrite}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req publishRequest
		if err := decodeStrict(body, &req); err != nil {
			var p *Problem
			if !errors.As(err, &p) || p.Status >= 500 {
				t.Fatalf("decode: %v is not a 4xx problem", err)
			}
			return
		}
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/v1/topics/orders/messages", nil), httptest.NewRecorder())
		msgs, err := s.buildMessages(c, topic, len(writable(topic)) > 0, true, req.Messages)
		if err != nil {
			if fromError(err).Status >= 500 {
				t.Fatalf("build: %v is not a 4xx", err)
			}
			return
		}
		for _, m := range msgs {
			for _, v := range append([]string{m.Tag, m.Key}, headerValues(m.Headers)...) {
				if !utf8.ValidString(v) || v != strings.Trim(v, " \t") || strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("accepted %q, which a header would not carry unchanged", v)
				}
			}
			if m.ContentType == "" || models.Padded(m.ContentType) || len(m.Body) > MaxMessageBytes {
				t.Fatalf("accepted content type %q / %d body bytes", m.ContentType, len(m.Body))
			}
			for name := range m.Headers {
				if !models.ValidMessageHeaderName(name) || name != models.CanonicalHeaderName(name) {
					t.Fatalf("accepted header name %q", name)
				}
			}
		}
	})
}

func headerValues(h map[string]string) []string {
	out := make([]string, 0, len(h))
	for _, v := range h {
		out = append(out, v)
	}
	return out
}

// FuzzAPIKeyAuth sends arbitrary Authorization headers through requireAPIKey with one
// known key in its cache: only that exact key passes; everything else answers 401
// problem+json (never a panic or a 5xx), and a prefix that could not exist never
// reaches the store (the Server here has none: a lookup would panic).
func FuzzAPIKeyAuth(f *testing.F) {
	key, prefix, hash := auth.NewAPIKey()
	for _, seed := range []string{"Bearer " + key, "Bearer " + key + "x", "Bearer hk_" + prefix + "_", "bearer hk_\xc3\xa9_x",
		"Bearer hk_" + prefix + " _x", "Bearer hk__x", "Basic abc", "", "Bearer hk_" + strings.ToUpper(prefix) + "_x"} {
		f.Add(seed)
	}
	known := &models.APIKey{ID: 1, Prefix: prefix, Hash: hash, Topics: []string{"*"}}
	s := &Server{keys: aheadcache.New(aheadcache.Options[string, *models.APIKey]{TTL: time.Hour, Load: func(_ context.Context, p string) (*models.APIKey, error) {
		if p != prefix {
			panic("a lookup of " + p + " reached the store")
		}
		return known, nil
	}})}
	e := echo.New()
	h := s.requireAPIKey(func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/topics/orders/messages", nil)
		req.Header.Set(echo.HeaderAuthorization, header)
		c := e.NewContext(req, httptest.NewRecorder())
		raw := bearer(c)
		if p, ok := auth.ParseAPIKey(raw); ok && p != prefix {
			if !models.ValidKeyPrefix(p) {
				t.Fatalf("ParseAPIKey accepted %q", p)
			}
			return // a real deployment would look it up; this Server has no store
		}
		err := h(c)
		sum := sha256.Sum256([]byte(raw))
		if string(sum[:]) == string(hash) {
			if err != nil {
				t.Fatalf("the right key was refused: %v", err)
			}
			return
		}
		var p *Problem
		if !errors.As(err, &p) || p.Status != http.StatusUnauthorized {
			t.Fatalf("%q: want a 401 problem, got %v", header, err)
		}
	})
}

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/api"
	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// specClient sends requests to a test Herald and validates each request and
// response against openapi.yaml (kin-openapi), recording which operations ran.
type specClient struct {
	t      *testing.T
	base   string
	router routers.Router
	mu     sync.Mutex
	seen   map[string]bool // operationId → exercised
}

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "openapi.yaml is not a valid OpenAPI document")
	return doc
}

func newSpecClient(t *testing.T, base string) *specClient {
	doc := loadSpec(t)
	doc.Servers = openapi3.Servers{{URL: base}}
	r, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	return &specClient{t: t, base: base, router: r, seen: map[string]bool{}}
}

// do sends method path with a JSON body (raw []byte or marshalled) and the bearer
// token, validates both directions and requires status want. It returns the body.
func (sc *specClient) do(method, path, token string, body any, want int) []byte {
	t := sc.t
	t.Helper()
	var raw []byte
	if body != nil {
		if b, ok := body.([]byte); ok {
			raw = b
		} else {
			var err error
			raw, err = json.Marshal(body)
			require.NoError(t, err)
		}
	}
	req, err := http.NewRequest(method, sc.base+path, bytes.NewReader(raw))
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	route, params, err := sc.router.FindRoute(req)
	require.NoError(t, err, "%s %s is not in openapi.yaml", method, path)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if want < 400 {
		require.NoError(t, reqErr, "request %s %s does not match openapi.yaml", method, path)
	}
	if raw != nil {
		req.Body = io.NopCloser(bytes.NewReader(raw))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, path, out)
	rv := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	rv.SetBodyBytes(out)
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), rv), "response of %s %s does not match openapi.yaml: %s", method, path, out)
	sc.mu.Lock()
	sc.seen[route.Operation.OperationID] = true
	sc.mu.Unlock()
	return out
}

// TestOpenAPIDescribesEveryRoute holds the document and the router to each other:
// every route Echo answers is described, and every described operation exists.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	dsn, _ := heraldtest.Database(t)
	_, ns := heraldtest.Redis(t)
	a, err := app.Open(context.Background(), heraldtest.TestConfig(dsn, ns), app.Roles{API: true}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := a.API
	param := regexp.MustCompile(`:([a-z_]+)`)
	routes := map[string]bool{}
	for _, r := range srv.Routes() {
		if r.Path == "/*" || r.Path == "/" || strings.HasPrefix(r.Path, "/console") || r.Method == "echo_route_not_found" {
			continue
		}
		p := param.ReplaceAllString(r.Path, "{$1}")
		routes[r.Method+" "+p] = true
		item := doc.Paths.Find(p)
		require.NotNil(t, item, "route %s %s is not in openapi.yaml", r.Method, p)
		require.NotNil(t, item.GetOperation(r.Method), "route %s %s is not in openapi.yaml", r.Method, p)
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			require.True(t, routes[method+" "+path], "openapi.yaml describes %s %s but no route answers it", method, path)
		}
	}
}

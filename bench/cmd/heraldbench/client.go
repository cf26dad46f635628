package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// apiClient talks to Herald's control plane (/api/v1, JWT) and data plane (/v1, API key).
type apiClient struct {
	base   string
	hc     *http.Client
	jwt    string
	apiKey string
}

func newAPIClient(base string) *apiClient {
	tr := &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &apiClient{base: base, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// statusError is an unexpected HTTP answer, kept whole for the report.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.method, e.path, e.status, e.body)
}

// do sends body (JSON-encoded unless it is []byte) and decodes a `want` answer into out.
func (c *apiClient) do(ctx context.Context, method, path, token string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return err
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		if len(rb) > 2048 {
			rb = append(rb[:2048], "…"...)
		}
		return &statusError{method: method, path: path, status: resp.StatusCode, body: string(rb)}
	}
	if out != nil {
		if err := json.Unmarshal(rb, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

func (c *apiClient) login(ctx context.Context, user, password string) error {
	var out struct {
		Token string `json:"token"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/auth/login", "", map[string]string{"username": user, "password": password}, http.StatusOK, &out)
	if err != nil {
		return err
	}
	if out.Token == "" {
		return fmt.Errorf("login: empty token")
	}
	c.jwt = out.Token
	return nil
}

func (c *apiClient) createAPIKey(ctx context.Context, topics []string) error {
	var out struct {
		Key string `json:"key"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/api-keys", c.jwt, map[string]any{"name": "bench", "topics": topics}, http.StatusCreated, &out)
	if err != nil {
		return err
	}
	if out.Key == "" {
		return fmt.Errorf("create api key: empty key")
	}
	c.apiKey = out.Key
	return nil
}

// createTopic creates a topic and returns its queue ids.
func (c *apiClient) createTopic(ctx context.Context, name string, queues int) ([]int64, error) {
	var out struct {
		Queues []struct {
			ID int64 `json:"id"`
		} `json:"queues"`
	}
	err := c.do(ctx, http.MethodPost, "/api/v1/topics", c.jwt, map[string]any{"name": name, "queues": queues}, http.StatusCreated, &out)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(out.Queues))
	for i, q := range out.Queues {
		ids[i] = q.ID
	}
	if len(ids) != queues {
		return ids, fmt.Errorf("create topic %s: asked %d queues, got %d", name, queues, len(ids))
	}
	return ids, nil
}

// groupSpec is the part of a group create request the benchmark varies.
type groupSpec struct {
	name, topic, endpoint, consumeFrom string
	batchSize, maxInFlight             int
}

// createGroup creates a group and returns its signing secret.
func (c *apiClient) createGroup(ctx context.Context, g groupSpec) (string, error) {
	body := map[string]any{
		"name":          g.name,
		"endpoint_url":  g.endpoint,
		"subscriptions": []map[string]any{{"topic": g.topic, "tags": []string{}}},
		"batch_size":    g.batchSize,
		"max_in_flight": g.maxInFlight,
		"rate_limit":    0,
		"timeout_ms":    15000,
		"consume_from":  g.consumeFrom,
	}
	var out struct {
		SigningSecret string `json:"signing_secret"`
		Status        string `json:"status"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/groups", c.jwt, body, http.StatusCreated, &out); err != nil {
		return "", err
	}
	return out.SigningSecret, nil
}

// published is one message id from a publish answer.
type published struct {
	ID     string `json:"id"`
	Queue  int64  `json:"queue"`
	Offset int64  `json:"offset"`
}

// publish posts a prebuilt envelope {"messages":[…]} to topic and returns the ids.
func (c *apiClient) publish(ctx context.Context, topic string, envelope []byte) ([]published, error) {
	var out struct {
		Messages []published `json:"messages"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/topics/"+topic+"/messages", c.apiKey, envelope, http.StatusCreated, &out); err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// pauseGroup pauses a group so it stops polling once its scenario is over.
func (c *apiClient) pauseGroup(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/groups/"+name+"/pause", c.jwt, nil, http.StatusOK, nil)
}

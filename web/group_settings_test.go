package web_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/heraldtest"
)

// console is a signed-in browser without JavaScript: a cookie jar holding the
// session, and the forms of the pages it opened.
type console struct {
	t    *testing.T
	h    *heraldtest.Herald
	http *http.Client
}

func newConsole(t *testing.T, h *heraldtest.Herald) *console {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	u, err := url.Parse(h.BaseURL + "/console/")
	require.NoError(t, err)
	jar.SetCookies(u, []*http.Cookie{{Name: "herald_session", Value: h.Token(), Path: "/console"}})
	return &console{t: t, h: h, http: &http.Client{Jar: jar}}
}

func (c *console) do(req *http.Request) (int, string) {
	c.t.Helper()
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, string(b)
}

var (
	inputRE    = regexp.MustCompile(`<input[^>]*>`)
	attrRE     = regexp.MustCompile(`(\w+)(?:="([^"]*)")?`)
	textareaRE = regexp.MustCompile(`(?s)<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>`)
	selectRE   = regexp.MustCompile(`(?s)<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>`)
	selectedRE = regexp.MustCompile(`<option value="([^"]*)"\s+selected`)
)

// form opens path and returns what a browser would submit of the form with that
// id, unchanged: inputs (checkboxes when checked), textareas and selects.
func (c *console) form(path, id string) url.Values {
	c.t.Helper()
	req, err := http.NewRequest("GET", c.h.BaseURL+path, nil)
	require.NoError(c.t, err)
	code, page := c.do(req)
	require.Equal(c.t, 200, code, page)
	start := strings.Index(page, `id="`+id+`"`)
	require.GreaterOrEqual(c.t, start, 0, "no form #%s on %s", id, path)
	f := page[start:]
	f = f[:strings.Index(f, "</form>")]
	out := url.Values{}
	for _, in := range inputRE.FindAllString(f, -1) {
		attrs := map[string]string{}
		for _, m := range attrRE.FindAllStringSubmatch(strings.TrimPrefix(in, "<input"), -1) {
			attrs[m[1]] = html.UnescapeString(m[2])
		}
		if _, checked := attrs["checked"]; attrs["type"] == "checkbox" && !checked {
			continue
		}
		if attrs["name"] != "" {
			out.Set(attrs["name"], attrs["value"])
		}
	}
	for _, m := range textareaRE.FindAllStringSubmatch(f, -1) {
		// Browsers submit textarea lines with CRLF.
		out.Set(m[1], strings.ReplaceAll(html.UnescapeString(m[2]), "\n", "\r\n"))
	}
	for _, m := range selectRE.FindAllStringSubmatch(f, -1) {
		if sel := selectedRE.FindStringSubmatch(m[2]); sel != nil {
			out.Set(m[1], sel[1])
		}
	}
	return out
}

// submit posts form to path and answers the status after redirects.
func (c *console) submit(path string, form url.Values) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.h.BaseURL+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// groupSettings reads a group's settings through the REST API.
func groupSettings(t *testing.T, h *heraldtest.Herald, name string) map[string]any {
	t.Helper()
	var g map[string]any
	require.NoError(t, json.Unmarshal(h.Admin("GET", "/groups/"+name, nil, 200), &g))
	return g
}

// TestConsoleSettingsSaveKeepsWhatItDoesNotShow: saving the console's settings form
// after changing only the rate limit changes only the rate limit; the settings the
// form does not show (dead-letter retention, batch byte limit, consume_from) keep
// their values instead of falling back to the defaults.
func TestConsoleSettingsSaveKeepsWhatItDoesNotShow(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders", "tags": []string{"a"}}},
		"dead_letter_retention_hours": 48, "batch_max_bytes": 4096, "consume_from": "earliest", "endpoint_headers": map[string]string{"x-team": "billing"}})
	c := newConsole(t, h)

	form := c.form("/console/groups/billing", "settings")
	form.Set("rate_limit", "7")
	code, page := c.submit("/console/groups/billing/settings", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "Settings saved")

	g := groupSettings(t, h, "billing")
	require.EqualValues(t, 7, g["rate_limit"])
	require.EqualValues(t, 48, g["dead_letter_retention_hours"], "not shown by the form: kept")
	require.EqualValues(t, 4096, g["batch_max_bytes"])
	require.Equal(t, "earliest", g["consume_from"])
	require.Equal(t, map[string]any{"x-team": "********"}, g["endpoint_headers"])
	require.Equal(t, []any{map[string]any{"topic": "orders", "tags": []any{"a"}, "filter": ""}}, g["subscriptions"])
}

// TestConsoleSettingsSaveKeepsConcurrentChange: an operator opens the settings form,
// another changes max_attempts through the REST API, then the first saves a new rate
// limit: both changes stay (the save writes only the field that was edited, on the
// group as it is then).
func TestConsoleSettingsSaveKeepsConcurrentChange(t *testing.T) {
	t.Parallel()
	h := heraldtest.StartHeraldRoles(t, app.Roles{API: true}, nil)
	h.CreateTopic("orders", 1)
	h.CreateGroup(map[string]any{"name": "billing", "endpoint_url": "http://8.8.8.8/hook", "subscriptions": []map[string]any{{"topic": "orders"}}})
	c := newConsole(t, h)

	form := c.form("/console/groups/billing", "settings")
	h.Admin("PATCH", "/groups/billing", map[string]any{"max_attempts": 3, "timeout_ms": 2500}, 200)
	form.Set("rate_limit", "9")
	code, page := c.submit("/console/groups/billing/settings", form)
	require.Equal(t, 200, code, page)
	require.Contains(t, page, "Settings saved")

	g := groupSettings(t, h, "billing")
	require.EqualValues(t, 9, g["rate_limit"])
	require.EqualValues(t, 3, g["max_attempts"], "the concurrent change stays")
	require.EqualValues(t, 2500, g["timeout_ms"])

	// A field edited in the form is saved even when its value is the default.
	form = c.form("/console/groups/billing", "settings")
	form.Set("max_attempts", "10")
	code, page = c.submit("/console/groups/billing/settings", form)
	require.Equal(t, 200, code, page)
	require.EqualValues(t, 10, groupSettings(t, h, "billing")["max_attempts"])
}

package web

import (
	"maps"
	"sort"
	"strings"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// endpointAuthFields are the settings form's push-auth, header and basic-auth inputs.
var endpointAuthFields = []string{"push_auth", "push_audience", "endpoint_headers", "basic_username", "basic_password"}

// endpointAuthForm fills the form values of d's push auth, headers (one "name: value"
// line each, values masked) and basic auth (password masked).
func endpointAuthForm(d control.GroupSettings, form map[string]string) {
	form["push_auth"] = "false"
	if d.PushAuth != nil {
		form["push_auth"], form["push_audience"] = "true", d.PushAuth.Audience
	}
	names := make([]string, 0, len(d.EndpointHeaders))
	for k := range maps.Keys(d.EndpointHeaders) {
		names = append(names, k)
	}
	sort.Strings(names)
	lines := make([]string, len(names))
	for i, k := range names {
		lines[i] = k + ": " + d.EndpointHeaders[k]
	}
	form["endpoint_headers"] = strings.Join(lines, "\n")
	if d.BasicAuth != nil {
		form["basic_username"], form["basic_password"] = d.BasicAuth.Username, d.BasicAuth.Password
	}
}

// applyEndpointAuthForm reads the form's push auth, headers and basic auth into p,
// each only when edited says its inputs changed. A header line without ':' is
// reported on /endpoint_headers; masked values keep the stored ones (control.GroupPatch).
func applyEndpointAuthForm(form map[string]string, p *control.GroupPatch, edited func(keys ...string) bool, errs map[string]string) {
	if edited("push_auth", "push_audience") {
		p.SetPushAuth = true
		if form["push_auth"] == "true" {
			p.PushAuth = &models.PushAuth{Audience: strings.TrimSpace(form["push_audience"])}
		}
	}
	if edited("endpoint_headers") {
		p.SetEndpointHeaders = true
		for _, line := range strings.Split(form["endpoint_headers"], "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			name, value, ok := strings.Cut(line, ":")
			if !ok {
				errs["/endpoint_headers"] = "one “name: value” per line"
				continue
			}
			if p.EndpointHeaders == nil {
				p.EndpointHeaders = map[string]string{}
			}
			p.EndpointHeaders[strings.ToLower(strings.TrimSpace(name))] = strings.TrimSpace(value)
		}
	}
	if edited("basic_username", "basic_password") {
		p.SetBasicAuth = true
		if u := strings.TrimSpace(form["basic_username"]); u != "" {
			p.BasicAuth = &models.BasicAuth{Username: u, Password: form["basic_password"]}
		}
	}
}

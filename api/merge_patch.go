package api

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// readOnlyGroupFields may appear in a PATCH body (a client echoing a GET) only with
// their current value; changing them has its own action (pause, resume, rotate).
var readOnlyGroupFields = []string{"id", "name", "signing_secret", "status", "paused_reason", "previous_secret_expires_at", "config_version", "created_at", "updated_at"}

// mergePatch applies an RFC 7386 JSON merge patch to doc: objects merge member by
// member, null removes a member, anything else (arrays included) replaces it.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}

// applyGroupPatch merges patch (a JSON merge patch of the group's settings) into g's
// current settings and returns the result as a create request would carry it:
// members removed by null are absent, so control gives them their defaults. A
// read-only field that changes is a read-only-field problem; a field no group has is
// unknown-field.
func applyGroupPatch(g *models.Group, patch []byte) (groupCreateRequest, error) {
	var req groupCreateRequest
	if err := refuseInvalidText(patch); err != nil {
		return req, err // decoding below would replace it with U+FFFD
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return req, problem(ProblemMalformedRequest, "the body must be a JSON object (a merge patch of the group)")
	}
	cur, _ := json.Marshal(groupDTO(g, true))
	var curFields map[string]json.RawMessage
	_ = json.Unmarshal(cur, &curFields)
	writable, _ := json.Marshal(control.SettingsOf(g))
	var doc map[string]any
	_ = json.Unmarshal(writable, &doc)
	var v models.ValidationError
	for k, raw := range fields {
		if slices.Contains(readOnlyGroupFields, k) {
			// A plain GET shows signing_secret empty; echoing that back changes nothing.
			if (k == "signing_secret" && !jsonEqual(raw, json.RawMessage(`""`))) || (k != "signing_secret" && !jsonEqual(raw, curFields[k])) {
				v.Add("/"+k, k+" cannot be changed by PATCH (use pause, resume or secret/rotate)")
			}
			delete(fields, k)
			continue
		}
		if _, ok := doc[k]; !ok {
			return req, problem(ProblemUnknownField, "unknown field \""+k+"\"")
		}
	}
	if len(v.Errors) > 0 {
		p := problem(ProblemReadOnlyField, v.Error())
		p.Errors = v.Errors
		return req, p
	}
	var pm map[string]any
	rest, _ := json.Marshal(fields)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.UseNumber()
	if err := dec.Decode(&pm); err != nil {
		return req, problem(ProblemMalformedRequest, err.Error())
	}
	if hs, ok := pm["endpoint_headers"].(map[string]any); ok {
		// Header names are case-insensitive: `X-Api-Key` in the patch is the group's
		// `x-api-key` member (replaced, or removed by null), not a second header.
		pm["endpoint_headers"] = models.CanonicalHeaders(hs)
	}
	if o, ok := pm["ordered"].(bool); ok && !o {
		if _, named := pm["ordering"]; !named {
			delete(doc, "ordering") // no longer ordered: the ordering goes with it
		}
	}
	merged, _ := json.Marshal(mergePatch(doc, pm))
	err := decodeStrict(merged, &req)
	return req, err
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

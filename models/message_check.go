package models

import (
	"fmt"
	"mime"
	"strings"
)

// Message limits, as the publish API and schedules apply them.
const (
	// MaxMessageBytes is the largest body a message may have (1 MiB).
	MaxMessageBytes = 1 << 20
	// MaxHeadersPerMessage is how many headers a message may carry.
	MaxHeadersPerMessage = 32
	// MaxHeaderValueBytes is the longest header value (bytes of UTF-8).
	MaxHeaderValueBytes = 1024
)

// CheckMessageFields validates msg's Tag, Key and ContentType and the headers
// given for it, adding each problem to v under JSON pointer p (such as
// "/messages/0"), and sets msg.Headers to the valid ones under their canonical
// names. The body is the caller's (its presence and size answer differently per
// transport).
func CheckMessageFields(p string, msg *Message, headers map[string]string, v *ValidationError) {
	if !ValidLabel(msg.Tag) {
		v.Add(p+"/tag", "tags are at most 255 bytes of UTF-8 without control characters or leading or trailing spaces")
	}
	if !ValidLabel(msg.Key) {
		v.Add(p+"/key", "keys are at most 255 bytes of UTF-8 without control characters or leading or trailing spaces")
	}
	if _, _, err := mime.ParseMediaType(msg.ContentType); err != nil || len(msg.ContentType) > 255 || !printableASCII(msg.ContentType) || Padded(msg.ContentType) {
		v.Add(p+"/content_type", "must be a media type such as application/json")
	}
	if len(headers) > MaxHeadersPerMessage {
		v.Add(p+"/headers", fmt.Sprintf("at most %d headers", MaxHeadersPerMessage))
	}
	for name, val := range CanonicalHeaders(headers) {
		hp := p + "/headers/" + PointerEscape(name)
		if !ValidMessageHeaderName(name) {
			v.Add(hp, "header names are x- followed by letters, digits and dashes (other names are reserved)")
			continue
		}
		if name != CanonicalHeaderName(name) {
			v.Add(hp, "this name is given twice (header names are case-insensitive)")
			continue
		}
		if len(val) > MaxHeaderValueBytes || !ValidHeaderValue(val) || Padded(val) {
			v.Add(hp, "header values are at most 1024 bytes of UTF-8 without control characters or leading or trailing spaces")
			continue
		}
		if msg.Headers == nil {
			msg.Headers = map[string]string{}
		}
		msg.Headers[name] = val
	}
}

// PointerEscape escapes s as one JSON pointer reference token (RFC 6901 §3).
func PointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

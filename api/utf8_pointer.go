package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// invalidUTF8Pointer returns the JSON pointer of the first member name or value of
// body holding invalid UTF-8 ("" for the document itself), and ok false when body
// is valid UTF-8. encoding/json (v1 semantics, also under GOEXPERIMENT=jsonv2)
// would silently turn such bytes into U+FFFD, so Herald would store and deliver
// text nobody published; callers refuse the request instead.
func invalidUTF8Pointer(body []byte) (pointer string, ok bool) {
	if utf8.Valid(body) {
		return "", false
	}
	bad := int64(firstInvalidUTF8(body))
	type frame struct {
		obj     bool
		key     string
		idx     int
		wantKey bool
	}
	var st []frame
	ptr := func() string {
		var b []byte
		for _, f := range st {
			b = append(b, '/')
			if f.obj {
				b = append(b, pointerEscape(f.key)...)
			} else {
				b = strconv.AppendInt(b, int64(f.idx), 10)
			}
		}
		return string(b)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return ptr(), true
		}
		hit := before <= bad && bad < dec.InputOffset()
		var top *frame
		if len(st) > 0 {
			top = &st[len(st)-1]
		}
		if s, isStr := tok.(string); isStr && top != nil && top.obj && top.wantKey {
			top.key, top.wantKey = s, false
			if hit {
				return ptr(), true
			}
			continue
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			st = st[:len(st)-1]
			if len(st) > 0 && st[len(st)-1].obj {
				st[len(st)-1].wantKey = true
			}
			continue
		}
		if top != nil && !top.obj {
			top.idx++
		}
		if hit {
			return ptr(), true
		}
		switch tok {
		case json.Delim('{'):
			st = append(st, frame{obj: true, wantKey: true})
		case json.Delim('['):
			st = append(st, frame{idx: -1})
		default:
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
	}
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

package client

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalidUTF8 is returned before anything is sent when a string of a request
// (a name, tag, key, header, password …) is not valid UTF-8: encoding/json would
// silently send U+FFFD in its place, so Herald would store text the caller never
// gave. The error names the field by JSON pointer. Bodies ([]byte, json.RawMessage)
// are not strings and are checked by the server.
var ErrInvalidUTF8 = fmt.Errorf("%w: a string is not valid UTF-8", ErrInvalid)

// checkText returns an error wrapping ErrInvalidUTF8 for the first string of v
// (struct fields by their JSON names, map keys and values, slice elements) that is
// not valid UTF-8, or nil.
func checkText(v any) error {
	if ptr, bad := invalidString(reflect.ValueOf(v), ""); bad {
		return fmt.Errorf("%w (%s)", ErrInvalidUTF8, ptr)
	}
	return nil
}

var rawType = reflect.TypeOf(json.RawMessage(nil))

func invalidString(v reflect.Value, at string) (string, bool) {
	switch v.Kind() {
	case reflect.String:
		return at, !utf8.ValidString(v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidString(v.Elem(), at)
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == rawType || v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		for i := range v.Len() {
			if p, bad := invalidString(v.Index(i), at+"/"+strconv.Itoa(i)); bad {
				return p, true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := fmt.Sprint(it.Key().Interface())
			if !utf8.ValidString(k) {
				return at + "/" + strings.ToValidUTF8(k, "\ufffd"), true
			}
			if p, bad := invalidString(it.Value(), at+"/"+k); bad {
				return p, true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if p, bad := invalidString(v.Field(i), at+"/"+name); bad {
				return p, true
			}
		}
	}
	return "", false
}

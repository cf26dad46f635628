package main

import "strings"

// sessionFlagNames are the flags every HTTP command takes (sessionFlags), with
// whether each takes a value. hoistSessionFlags lets them stand anywhere on the line.
var sessionFlagNames = map[string]bool{"url": true, "output": true, "json": false}

// hoistSessionFlags moves the session flags (--url, --output, --json, in any
// spelling the flag package accepts: -url, --url=…) found anywhere in args to the
// end, so `herald --url U topic list` and `herald topic --json list` mean what
// `herald topic list --url U` does. Nothing after a "--" moves.
func hoistSessionFlags(args []string) []string {
	var rest, moved []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, hasValue := sessionFlag(a)
		if name == "" {
			rest = append(rest, a)
			continue
		}
		moved = append(moved, a)
		if sessionFlagNames[name] && !hasValue && i+1 < len(args) {
			i++
			moved = append(moved, args[i])
		}
	}
	return append(rest, moved...)
}

// sessionFlag returns the session flag a names ("" if none) and whether a carries
// its value (--url=…).
func sessionFlag(a string) (string, bool) {
	if !strings.HasPrefix(a, "-") {
		return "", false
	}
	name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if _, ok := sessionFlagNames[name]; !ok || strings.HasPrefix(a, "---") {
		return "", false
	}
	return name, hasValue
}

// httpCommand reports whether the first word of a command line names a command
// over HTTP (a resource, login or refresh), the ones that take the session flags.
func httpCommand(word string) bool {
	_, ok := cliResources[word]
	return ok || word == loginCommand.name || word == refreshCommand.name
}

// firstWord returns the first argument that is not a session flag or its value.
func firstWord(args []string) string {
	for i := 0; i < len(args); i++ {
		name, hasValue := sessionFlag(args[i])
		if name == "" {
			return args[i]
		}
		if sessionFlagNames[name] && !hasValue {
			i++
		}
	}
	return ""
}

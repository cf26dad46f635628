package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// commandHeading is a command's section in docs/cli.md: ### `herald topic create`.
var commandHeading = regexp.MustCompile("^### `herald ([a-z -]+)`$")

// commandMention is a command named in a doc's text: `herald <word> [<word>]`
// inside backquotes or a code block, up to its first flag or argument.
var commandMention = regexp.MustCompile(`\bherald ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?`)

// docMistakes returns what doc (markdown) says wrong about the CLI's commands:
// a mention of a command that does not exist, and a command called "not built".
// When complete, it also wants exactly one section per command (commandHeading)
// and none for anything else.
func docMistakes(doc string, complete bool) []string {
	names := commandNames()
	resources := map[string]bool{}
	for r := range cliResources {
		resources[r] = true
	}
	var out []string
	sections := map[string]int{}
	section := ""
	for i, line := range strings.Split(doc, "\n") {
		where := func(f string, a ...any) {
			out = append(out, "line "+itoa(i+1)+": "+strings.TrimSpace(fmt.Sprintf(f, a...)))
		}
		if m := commandHeading.FindStringSubmatch(line); m != nil {
			section = m[1]
			sections[m[1]]++
		} else if strings.HasPrefix(line, "#") {
			section = ""
		}
		for _, m := range commandMention.FindAllStringSubmatch(line, -1) {
			switch {
			case resources[m[1]] && m[2] != "" && !slices.Contains(names, m[1]+" "+m[2]):
				where("names `herald %s %s`, which is no command", m[1], m[2])
			case !resources[m[1]] && !slices.ContainsFunc(names, func(n string) bool { return n == m[1] || strings.HasPrefix(n, m[1]+" ") }):
				where("names `herald %s`, which is no command", m[1])
			}
		}
		if strings.Contains(strings.ToLower(line), "not built") {
			if section != "" {
				where("says \"not built\" in the section of `herald %s`, which is built", section)
			}
			for _, n := range names {
				res, verb, _ := strings.Cut(n, " ")
				inTable := verb != "" && strings.Contains(line, "herald "+res) &&
					regexp.MustCompile("`"+regexp.QuoteMeta(verb)+"[ `]").MatchString(line)
				if strings.Contains(line, "herald "+n) || inTable {
					where("says \"not built\" of `herald %s`, which is built", n)
				}
			}
		}
	}
	if complete {
		for _, n := range names {
			if sections[n] != 1 {
				out = append(out, "no section (### `herald "+n+"`) for the command `herald "+n+"`, or more than one")
			}
		}
		for s := range sections {
			if !slices.Contains(names, s) {
				out = append(out, "a section for `herald "+s+"`, which is no command")
			}
		}
	}
	return out
}

// TestCLIDocs: docs/cli.md has a section for every command of the CLI's command
// table and none for anything else, and neither it nor the README and the other
// user docs (the delivery contract, running Herald) name a command that does not
// exist or call a built one "not built".
func TestCLIDocs(t *testing.T) {
	t.Parallel()
	for path, complete := range map[string]bool{"../../docs/cli.md": true, "../../README.md": false,
		"../../docs/delivery.md": false, "../../docs/operations.md": false} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Empty(t, docMistakes(string(b), complete), path)
	}
}

// TestCLIDocsCatchMistakes: the doc check finds each kind of mistake it is for.
func TestCLIDocsCatchMistakes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	doc := string(b)
	require.Empty(t, docMistakes(doc, true))
	for name, bad := range map[string]string{
		"a command missing":   strings.Replace(doc, "### `herald node drain`", "### Draining", 1),
		"a command invented":  doc + "\n### `herald node frobnicate`\n",
		"a mention invented":  doc + "\nRun `herald topic frobnicate orders`.\n",
		"a resource invented": doc + "\nRun `herald widget list`.\n",
		"not built, inline":   doc + "\n| `herald node` | `drain <id>` (not built) |\n",
		"not built, section":  strings.Replace(doc, "### `herald topic move`\n", "### `herald topic move`\n\nNot built yet.\n", 1),
	} {
		require.NotEmpty(t, docMistakes(bad, true), name)
	}
}

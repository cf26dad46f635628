package control_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLayout holds the import rules of .golangci.yml's depguard without the linter:
// the transports (api, web) and the roles (dispatcher, worker) never import each
// other, control imports none of them, nor Echo, the transports' code (api, web,
// cmd/herald) reads and writes through control, never models/store, and the
// packages under internal/ are leaves that import no role (only the black-box e2e
// tests do).
func TestLayout(t *testing.T) {
	t.Parallel()
	const mod = "github.com/heraldhq/herald/"
	deny := map[string][]string{
		"api":        {mod + "web", mod + "dispatcher", mod + "worker"},
		"web":        {mod + "api", mod + "dispatcher", mod + "worker"},
		"control":    {mod + "api", mod + "web", mod + "dispatcher", mod + "worker", "github.com/labstack/echo"},
		"dispatcher": {mod + "api", mod + "web", mod + "worker"},
		"worker":     {mod + "api", mod + "web", mod + "dispatcher"},
	}
	// Rules for code only (tests may set up state through the store or the harness).
	codeDeny := map[string][]string{
		"api":        {mod + "models/store"},
		"web":        {mod + "models/store"},
		"cmd/herald": {mod + "models/store"},
		"internal":   {mod + "api", mod + "web", mod + "dispatcher", mod + "worker", mod + "maintenance", mod + "control", mod + "app", mod + "heraldtest"},
	}
	allowed := func(imp string) bool { return imp == mod+"worker/task" }
	check(t, deny, false, allowed)
	check(t, codeDeny, true, allowed)
}

// check walks each dir of rules (relative to the module root) and reports every
// import of a denied package; codeOnly skips _test.go files, and files under
// internal/e2e are black-box tests of the whole house.
func check(t *testing.T, rules map[string][]string, codeOnly bool, allowed func(string) bool) {
	for dir, denied := range rules {
		root := filepath.Join("..", dir)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			if (codeOnly && strings.HasSuffix(path, "_test.go")) || strings.Contains(filepath.ToSlash(path), "internal/e2e/") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				for _, d := range denied {
					if (imp == d || strings.HasPrefix(imp, d+"/")) && !allowed(imp) {
						t.Errorf("%s imports %s", path, imp)
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
}

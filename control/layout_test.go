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
// other, and control imports none of them, nor Echo.
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
	allowed := func(imp string) bool { return imp == mod+"worker/task" }
	for dir, denied := range deny {
		root := filepath.Join("..", dir)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
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

package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProblemKindsComplete holds the problem catalogue together: every ProblemKind
// constant has a status and title, kinds are distinct, and no handler names a kind
// by a string literal (which would compile to an unknown kind and answer 500).
func TestProblemKindsComplete(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var consts []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "ProblemKind" {
					for _, v := range n.Values {
						consts = append(consts, strings.Trim(v.(*ast.BasicLit).Value, `"`))
					}
				}
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "problem" && len(n.Args) > 0 {
					_, literal := n.Args[0].(*ast.BasicLit)
					require.False(t, literal, "%s: name the problem kind by its constant", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	require.Len(t, problemKinds, len(consts), "every kind constant has one table entry")
	seen := map[string]bool{}
	for _, k := range consts {
		require.False(t, seen[k], "kind %q is declared twice", k)
		seen[k] = true
		e, ok := problemKinds[ProblemKind(k)]
		require.True(t, ok, "kind %q has no status and title", k)
		require.NotEmpty(t, http.StatusText(e.status), k)
		require.NotEmpty(t, e.title, k)
	}
}

// TestProblemFromError: each models error leaves with its stable kind and status.
func TestProblemFromError(t *testing.T) {
	t.Parallel()
	for _, tc := range sentinelKinds {
		p := fromError(tc.err)
		require.Equal(t, ProblemBase+string(tc.kind), p.Type)
		require.Equal(t, problemKinds[tc.kind].status, p.Status)
	}
	require.Equal(t, ProblemBase+string(ProblemInternal), fromError(http.ErrHandlerTimeout).Type)
}

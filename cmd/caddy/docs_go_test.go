package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDocsGoBlocksCompile compiles every ```go block of every page under docs/ the way
// TestReadmeGoBlocksCompile does the README's: a block of statements as the body of a function
// with a ctx and an SDK client in scope; a block of declarations (marked with the package it
// is taken from) against that package's own. A page whose Go drifted from the code fails here.
func TestDocsGoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build; run without -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pages {
		pages[i], _ = filepath.Rel(root, p)
	}
	counts := compileGoBlocks(t, root, pages)
	// The pages known to hold Go today: losing all of a page's blocks is a change to notice.
	for _, page := range []string{"docs/sdk.md", "docs/webhooks.md", "docs/protocol.md"} {
		if counts[page] == 0 {
			t.Errorf("%s has no go block any more; update this list if that is meant", page)
		}
	}
}

// snippetImports are the packages a block of statements may use without importing them: the
// SDK's and the standard library's that the pages' examples use. Each is used once in the
// generated file, so a block need not use them all.
var snippetImports = map[string]string{
	"context":  "context.Background",
	"errors":   "errors.Is",
	"fmt":      "fmt.Sprint",
	"io":       "io.EOF",
	"log":      "log.Printf",
	"net/http": "http.StatusOK",
	"os":       "os.Getenv",
	"github.com/harness-edge/harness-edge/sdk":     "sdk.New",
	"github.com/harness-edge/harness-edge/sdk/api": "api.BusyPolicyEnqueue",
}

// compileGoBlocks builds every ```go block of pages (paths relative to root) in one package of
// the server module, added through an overlay so nothing is written into the clone, and fails t
// with the compiler's errors, which name the page and line of a block of statements (//line).
//
// A block of statements may begin with an import block (as a page shows what to import); the
// imports are hoisted. A block marked `<!-- go package: backend -->` holds declarations of that
// package (below the module): each interface it declares must have exactly the method set of the
// package's type of the same name, checked by assigning each to the other. It returns the number
// of Go blocks of each page.
func compileGoBlocks(t *testing.T, root string, pages []string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	imports := map[string]bool{}
	for path := range snippetImports {
		imports[path] = true
	}
	var funcs, decls strings.Builder
	var declImports []string
	n := 0
	for _, page := range pages {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range docBlocks(string(text)) {
			if b.lang != "go" {
				continue
			}
			counts[page]++
			n++
			if b.goPackage != "" {
				path := "github.com/harness-edge/harness-edge/" + b.goPackage
				if !slices.Contains(declImports, path) {
					declImports = append(declImports, path)
				}
				if err := declarationsAgainst(&decls, b.body, fmt.Sprintf("%s:%d", page, b.line)); err != nil {
					t.Errorf("%s:%d: %v", page, b.line, err)
				}
				continue
			}
			body, hoisted, skipped := hoistImports(b.body)
			for _, path := range hoisted {
				imports[path] = true
			}
			if first, _, _ := strings.Cut(strings.TrimSpace(body), " "); first == "type" || first == "func" {
				t.Errorf("%s:%d: a Go block of declarations needs `<!-- go package: … -->` on the line before it, naming the package it shows", page, b.line)
				continue
			}
			fmt.Fprintf(&funcs, "\nfunc snippet%d(ctx context.Context, client *sdk.Client) error {\n//line %s:%d\n%s\treturn nil\n}\n",
				n, page, b.line+1+skipped, body)
		}
	}

	files := map[string]string{"snippets.go": snippetFile(imports, funcs.String())}
	if decls.Len() > 0 {
		var src strings.Builder
		src.WriteString("package docsnippets\n\nimport (\n\t\"context\"\n\n")
		for _, path := range declImports {
			fmt.Fprintf(&src, "\t. %q\n", path)
		}
		src.WriteString("\t\"github.com/harness-edge/harness-edge/sdk/api\"\n)\n\nvar _, _ = context.Background, api.BusyPolicyEnqueue\n")
		src.WriteString(decls.String())
		files["declarations.go"] = src.String()
	}
	buildOverlay(t, root, "internal/docsnippets", files)
	return counts
}

// hoistImports takes the import block a page's example may begin with off body, and returns the
// imported paths and how many lines it took.
func hoistImports(body string) (rest string, paths []string, lines int) {
	if !strings.HasPrefix(body, "import (") {
		return body, nil, 0
	}
	block, after, ok := strings.Cut(body, "\n)\n")
	if !ok {
		return body, nil, 0
	}
	for _, line := range strings.Split(block, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			paths = append(paths, strings.Trim(f[len(f)-1], `"`))
		}
	}
	lines = strings.Count(block, "\n") + 2
	// The blank line after the imports stays out as well.
	for strings.HasPrefix(after, "\n") {
		after, lines = after[1:], lines+1
	}
	return after, paths, lines
}

func snippetFile(imports map[string]bool, funcs string) string {
	var src strings.Builder
	src.WriteString("package docsnippets\n\nimport (\n")
	var uses, paths []string
	for path := range imports {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		fmt.Fprintf(&src, "\t%q\n", path)
		if use, ok := snippetImports[path]; ok {
			uses = append(uses, use)
		}
	}
	slices.Sort(uses)
	fmt.Fprintf(&src, ")\n\nvar _ = []any{%s}\n", strings.Join(uses, ", "))
	src.WriteString(funcs)
	return src.String()
}

// declarationsAgainst writes body's interface declarations to out renamed docName, with the
// assignments that hold only when the package's Name (dot-imported) has the same method set.
func declarationsAgainst(out *strings.Builder, body, where string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, where, "package p\n"+body, parser.ParseComments)
	if err != nil {
		return err
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			return fmt.Errorf("only type declarations of interfaces are checked against the code")
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			if _, ok := ts.Type.(*ast.InterfaceType); !ok {
				return fmt.Errorf("type %s: only interfaces are checked against the code", ts.Name.Name)
			}
			names = append(names, ts.Name.Name)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && slices.Contains(names, id.Name) {
			id.Name = "doc" + id.Name
		}
		return true
	})
	fmt.Fprintf(out, "\n// %s\n", where)
	for _, d := range f.Decls {
		var buf bytes.Buffer
		if err := printer.Fprint(&buf, fset, d); err != nil {
			return err
		}
		out.Write(buf.Bytes())
		out.WriteString("\n")
	}
	for _, name := range names {
		fmt.Fprintf(out, "var _ = func(x %[1]s) doc%[1]s { return x } // the code's %[1]s has every method %[2]s shows\n", name, where)
		fmt.Fprintf(out, "var _ = func(x doc%[1]s) %[1]s { return x } // and %[2]s shows all of them\n", name, where)
	}
	return nil
}

// buildOverlay builds the package dir (relative to root, absent from the clone) made of files,
// written to a temporary directory and laid over the clone, and fails t with the compiler's
// output and the sources.
func buildOverlay(t *testing.T, root, dir string, files map[string]string) {
	t.Helper()
	tmp := t.TempDir()
	replace := map[string]string{}
	var all strings.Builder
	for name, src := range files {
		file := filepath.Join(tmp, name)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(root, dir, name)] = file
		fmt.Fprintf(&all, "--- %s\n%s", name, src)
	}
	var overlay strings.Builder
	overlay.WriteString(`{"Replace":{`)
	i := 0
	for from, to := range replace {
		if i > 0 {
			overlay.WriteString(",")
		}
		fmt.Fprintf(&overlay, "%q:%q", from, to)
		i++
	}
	overlay.WriteString("}}")
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), []byte(overlay.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-overlay", filepath.Join(tmp, "overlay.json"), "./"+dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the pages' Go blocks do not compile: %v\n%s\n--- as compiled\n%s", err, out, all.String())
	}
}

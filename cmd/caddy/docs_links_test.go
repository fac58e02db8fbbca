package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
)

// TestDocsLinks follows every relative link of README.md, CONTRIBUTING.md and docs/*.md (links
// in code blocks aside): the file must exist and an #anchor must name a heading of it, as GitHub
// derives anchors. And the README's documentation index must list every page of docs/.
func TestDocsLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := readPage(t, filepath.Join(root, "README.md"))
	for _, p := range pages {
		if rel := "docs/" + filepath.Base(p); !strings.Contains(readme, "]("+rel+")") {
			t.Errorf("README.md's documentation index does not list %s", rel)
		}
	}
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"))
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		text := withoutCodeBlocks(readPage(t, page))
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			where := fmt.Sprintf("%s: link %s", strings.TrimPrefix(page, root+"/"), target)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: no such file", where)
				continue
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if anchors[path] == nil {
				anchors[path] = pageAnchors(readPage(t, path))
			}
			if !anchors[path][anchor] {
				t.Errorf("%s: no heading with that anchor", where)
			}
		}
	}
}

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withoutCodeBlocks drops fenced blocks, whose brackets are code, not links.
func withoutCodeBlocks(page string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// pageAnchors are the anchors GitHub gives a page's headings (lower case, punctuation dropped,
// spaces to hyphens, -1, -2… for repeats) and its explicit <a id> anchors.
func pageAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeading.FindAllStringSubmatch(withoutCodeBlocks(page), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(page, -1) {
		anchors[m[1]] = true
	}
	return anchors
}

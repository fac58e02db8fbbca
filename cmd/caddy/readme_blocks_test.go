package main

import (
	"regexp"
	"strings"
)

// A docBlock is one fenced code block of a Markdown page, with what the page says about it in
// HTML comments (invisible once rendered): `<!-- not run: reason -->` on the line before the
// fence keeps a shell block out of the run and says why; `<!-- expect: text -->` lines right
// after the closing fence are text the block's output must contain; `<!-- go package: path -->`
// on the line before a Go block of declarations names the package (below the module) whose
// declarations it shows (see compileGoBlocks).
type docBlock struct {
	lang    string // what follows the opening fence: "sh", "go", "caddyfile", …
	line    int    // 1-based line of the opening fence
	body    string
	notRun  string // the reason given in `<!-- not run: … -->`, "" when it runs
	expects []string
	// goPackage is the package named by `<!-- go package: … -->`, "" for a block of statements.
	goPackage string
}

var (
	notRunComment = regexp.MustCompile(`^<!-- not run: (.+) -->$`)
	expectComment = regexp.MustCompile(`^<!-- expect: (.+) -->$`)
	goPackageMark = regexp.MustCompile(`^<!-- go package: (.+) -->$`)
)

// docBlocks reads the fenced blocks of a Markdown page in order.
func docBlocks(page string) []docBlock {
	lines := strings.Split(page, "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		b := docBlock{lang: strings.TrimSpace(lang), line: i + 1}
		if i > 0 {
			if m := notRunComment.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.notRun = m[1]
			}
			if m := goPackageMark.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.goPackage = m[1]
			}
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.body = strings.Join(body, "\n") + "\n"
		for i+1 < len(lines) {
			m := expectComment.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
			if m == nil {
				break
			}
			b.expects = append(b.expects, m[1])
			i++
		}
		blocks = append(blocks, b)
	}
	return blocks
}

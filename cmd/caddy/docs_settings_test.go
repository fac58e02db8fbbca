package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// caddyfileCase is a setting (or a value) a Caddyfile parser in caddymodule switches on.
var caddyfileCase = regexp.MustCompile(`case ((?:"[a-z_]*",? ?)+):`)

// TestConfigurationDocumentsEverySetting keeps docs/configuration.md, the directive's full
// reference, complete: every name a caddymodule Caddyfile parser accepts appears in it.
func TestConfigurationDocumentsEverySetting(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../../caddymodule/*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range caddyfileCase.FindAllStringSubmatch(string(src), -1) {
			for _, name := range regexp.MustCompile(`"([a-z_]+)"`).FindAllStringSubmatch(m[1], -1) {
				checked++
				if !strings.Contains(string(doc), name[1]) {
					t.Errorf("%s accepts %q, which docs/configuration.md does not mention", filepath.Base(f), name[1])
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("found %d settings in caddymodule's parsers; the pattern no longer matches them", checked)
	}
}

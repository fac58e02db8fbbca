package caddymodule

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestValidateOpensNoStore: validating a config (what `caddy validate` does) provisions it but
// must not open its store — on a shared store that would join the cluster, on bbolt it takes the
// file's lock and creates the file. Starting the same config opens the store before any request.
func TestValidateOpensNoStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "harness")
	site := `
http://localhost:9080 {
	harness {
		data_dir ` + dir + `
	}
}
`
	raw, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(globalOptions()+site), nil)
	if err != nil {
		t.Fatalf("adapting the Caddyfile: %v (%v)", err, warnings)
	}
	var cfg caddy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := caddy.Validate(&cfg); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("after validate the store's directory %s exists (stat: %v): validate opened the store", dir, err)
	}

	loadCaddyfile(t, site)
	if _, err := os.Stat(filepath.Join(dir, "harness.db")); err != nil {
		t.Fatalf("after the config started, before any request, the store file: %v (want it open)", err)
	}
}

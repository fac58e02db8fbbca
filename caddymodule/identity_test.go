package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

func TestAdaptIdentitySetting(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		identity {http.auth.user.id}
	}
}
`, "caddyfile", `{
	"apps": {
		"http": {
			"servers": {
				"srv0": {
					"listen": [
						":4310"
					],
					"routes": [
						{
							"handle": [
								{
									"handler": "harness",
									"identity": "{http.auth.user.id}"
								}
							]
						}
					]
				}
			}
		}
	}
}`)
	for name, body := range map[string]string{
		"identity without value":   "harness {\n identity\n}",
		"identity with two values": "harness {\n identity {a} {b}\n}",
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+body+"\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), "wrong argument count") {
				t.Fatalf("error %v, want wrong argument count", err)
			}
		})
	}
}

package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestAdaptFullCaddyfile pins the JSON a Caddyfile using every setting adapts to. It also shows
// the directive's order: harness runs before encode (and before anything after it) although the
// site lists it last, with no global `order` line.
func TestAdaptFullCaddyfile(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	bind 127.0.0.1
	encode gzip
	respond "not the protocol"
	harness {
		data_dir /var/lib/harness
		heartbeat 20s
		max_body_size 2MiB
		cancel_timeout 10s
		retention 7d
		stream_retention 1d
		provider mock
		provider mock second
		provider acp claude {
			command npx
			args -y @zed-industries/claude-code-acp
			env ANTHROPIC_API_KEY {env.ANTHROPIC_API_KEY}
			env PATH /usr/bin:/bin
			cwd /srv/agents/claude
			initialization_timeout 15s
			run_timeout 10m
			shutdown_grace 1s
			max_message_bytes 2MiB
			max_pending_permissions 8
			conversation_root /srv/agents/claude/conversations
			idle_timeout 2m
			max_processes 4
		}
	}
}
`, "caddyfile", `{
	"apps": {
		"http": {
			"servers": {
				"srv0": {
					"listen": [
						"127.0.0.1:4310"
					],
					"routes": [
						{
							"handle": [
								{
									"cancel_timeout": 10000000000,
									"data_dir": "/var/lib/harness",
									"handler": "harness",
									"heartbeat": 20000000000,
									"max_body_size": 2097152,
									"providers": [
										{
											"provider": "mock"
										},
										{
											"id": "second",
											"provider": "mock"
										},
										{
											"args": [
												"-y",
												"@zed-industries/claude-code-acp"
											],
											"command": "npx",
											"conversation_root": "/srv/agents/claude/conversations",
											"cwd": "/srv/agents/claude",
											"env": {
												"ANTHROPIC_API_KEY": "{env.ANTHROPIC_API_KEY}",
												"PATH": "/usr/bin:/bin"
											},
											"id": "claude",
											"idle_timeout": "2m0s",
											"initialization_timeout": "15s",
											"max_message_bytes": 2097152,
											"max_pending_permissions": 8,
											"max_processes": 4,
											"provider": "acp",
											"run_timeout": "10m0s",
											"shutdown_grace": "1s"
										}
									],
									"retention": 604800000000000,
									"stream_retention": 86400000000000
								},
								{
									"encodings": {
										"gzip": {}
									},
									"handler": "encode",
									"prefer": [
										"gzip"
									]
								},
								{
									"body": "not the protocol",
									"handler": "static_response"
								}
							]
						}
					]
				}
			}
		}
	}
}`)
}

// TestAdaptRemoteProvider pins the JSON of a remote provider block with every setting.
func TestAdaptRemoteProvider(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness {
		provider remote echo {
			upstream https://runtime.internal:4310
			upstream_provider mock
			bearer_token {env.UPSTREAM_TOKEN}
			header X-Tenant acme
			ca_file /etc/harness/upstream-ca.pem
			manifest_timeout 3s
			request_timeout 20s
			upstream_gone_timeout 90s
		}
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
									"providers": [
										{
											"bearer_token": "{env.UPSTREAM_TOKEN}",
											"ca_file": "/etc/harness/upstream-ca.pem",
											"headers": {
												"X-Tenant": "acme"
											},
											"id": "echo",
											"manifest_timeout": 3000000000,
											"provider": "remote",
											"request_timeout": 20000000000,
											"upstream": "https://runtime.internal:4310",
											"upstream_gone_timeout": 90000000000,
											"upstream_provider": "mock"
										}
									]
								}
							]
						}
					]
				}
			}
		}
	}
}`)
}

func TestAdaptBareDirective(t *testing.T) {
	caddytest.AssertAdapt(t, `
:4310 {
	harness
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
									"handler": "harness"
								}
							]
						}
					]
				}
			}
		}
	}
}`)
}

// TestAdaptStore: `store bolt <dir>` and `store bolt { path <dir> }` adapt to the same guest
// module in harness.stores; data_dir keeps adapting as before (it means the same store).
func TestAdaptStore(t *testing.T) {
	want := func(handler string) string {
		return `{"apps":{"http":{"servers":{"srv0":{"listen":[":4310"],"routes":[{"handle":[` + handler + `]}]}}}}}`
	}
	for name, tc := range map[string]struct{ body, handler string }{
		"shorthand": {"store bolt /var/lib/harness", `{"handler":"harness","store":{"backend":"bolt","path":"/var/lib/harness"}}`},
		"block":     {"store bolt {\n path /var/lib/harness\n }", `{"handler":"harness","store":{"backend":"bolt","path":"/var/lib/harness"}}`},
		"default":   {"store bolt", `{"handler":"harness","store":{"backend":"bolt"}}`},
		"data_dir":  {"data_dir /var/lib/harness", `{"data_dir":"/var/lib/harness","handler":"harness"}`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\nharness {\n"+tc.body+"\n}\n}\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg) != want(tc.handler) {
				t.Fatalf("adapted to\n%s\nwant\n%s", cfg, want(tc.handler))
			}
		})
	}
}

func TestCaddyfileErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"argument":            {`harness extra`, "wrong argument count"},
		"unknown setting":     {"harness {\n heartbeet 5s\n}", `unrecognized harness setting "heartbeet"`},
		"bad duration":        {"harness {\n heartbeat soon\n}", "heartbeat"},
		"missing value":       {"harness {\n data_dir\n}", "wrong argument count"},
		"bad size":            {"harness {\n max_body_size lots\n}", "max_body_size"},
		"unknown provider":    {"harness {\n provider nope\n}", "harness.providers.nope"},
		"provider without id": {"harness {\n provider\n}", "wrong argument count"},
		"mock settings": {`harness {
			provider mock {
				prefix x
			}
		}`, "the mock provider has no settings"},
		"acp env twice": {`harness {
			provider acp a {
				env K 1
				env K 2
			}
		}`, "env K is set twice"},
		"remote without upstream": {`harness {
			provider remote mock
		}`, "needs an upstream URL"},
		"remote unknown setting": {`harness {
			provider remote mock {
				upstream http://127.0.0.1:1
				upstream_gone 5s
			}
		}`, `unrecognized remote provider setting "upstream_gone"`},
		"remote header twice": {`harness {
			provider remote mock {
				upstream http://127.0.0.1:1
				header X-Key 1
				header X-Key 2
			}
		}`, "header X-Key is set twice"},
		"store and data_dir":    {"harness {\n data_dir /a\n store bolt /b\n}", "data_dir and store both name the store"},
		"data_dir after store":  {"harness {\n store bolt /b\n data_dir /a\n}", "data_dir and store both name the store"},
		"store twice":           {"harness {\n store bolt /a\n store bolt /b\n}", "store given twice"},
		"unknown store":         {"harness {\n store nope\n}", "harness.stores.nope"},
		"store without backend": {"harness {\n store\n}", "wrong argument count"},
		"bolt path twice":       {"harness {\n store bolt /a {\n path /b\n }\n}", "path given twice"},
		"bolt unknown setting":  {"harness {\n store bolt {\n dir /b\n }\n}", `unrecognized store bolt setting "dir"`},
		"acp max_processes zero": {`harness {
			provider acp a {
				command agent
				max_processes 0
			}
		}`, `max_processes: "0" is not a whole number of at least 1`},
		"acp unknown setting": {`harness {
			provider acp a {
				comand npx
			}
		}`, `unrecognized acp provider setting "comand"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":4310 {\n"+tc.body+"\n}\n"), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestExamplesAdapt keeps every Caddyfile in examples/ loadable by this build.
func TestExamplesAdapt(t *testing.T) {
	t.Setenv("HARNESS_DOMAIN", "harness.example.com")
	t.Setenv("ACME_EMAIL", "ops@example.com")
	t.Setenv("HARNESS_UPSTREAM_URL", "http://127.0.0.1:4310")
	t.Setenv("HARNESS_PASSWORD_HASH", "$2a$14$X.YoJqpdQLRKFsrGNt7jkeDPQv6yYiFZa0zkTN8tR26fR9uQ2y7/2") // "not-a-secret"
	t.Setenv("HARNESS_ALICE_HASH", "$2a$14$X.YoJqpdQLRKFsrGNt7jkeDPQv6yYiFZa0zkTN8tR26fR9uQ2y7/2")
	t.Setenv("HARNESS_BOB_HASH", "$2a$14$X.YoJqpdQLRKFsrGNt7jkeDPQv6yYiFZa0zkTN8tR26fR9uQ2y7/2")
	t.Setenv("HARNESS_DATABASE_URL", "postgres://harness@127.0.0.1:5432/harness")
	t.Setenv("HARNESS_NODE", "a")
	files, err := filepath.Glob("../examples/*Caddyfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example Caddyfiles: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": file})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range warnings {
				t.Errorf("warning: %s:%d: %s", w.File, w.Line, w.Message)
			}
			// The cluster's load balancer proxies to nodes that have the harness handler.
			want := `"handler":"harness"`
			if filepath.Base(file) == "cluster-lb.Caddyfile" {
				want = `"handler":"reverse_proxy"`
			}
			if !strings.Contains(string(cfg), want) {
				t.Fatalf("no %s in %s", want, cfg)
			}
		})
	}
}

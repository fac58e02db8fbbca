// Command caddy is Caddy with the harness-edge module compiled in: the same binary
// `xcaddy build --with github.com/harness-edge/harness-edge/caddymodule` would produce,
// built in-repo so that `go build ./cmd/caddy` is all a contributor needs.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	// The standard modules: the HTTP server, TLS automation, file_server, reverse_proxy, …
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	// The Harness Runtime API handler and its provider guest modules.
	_ "github.com/harness-edge/harness-edge/caddymodule"
)

func main() {
	caddycmd.Main()
}

// Package openapi holds harness.yaml, the single source of the Harness Runtime API wire
// contract, and the go:generate directives that turn it into sdk/api: the wire types and
// client (oapi-codegen), and the protocol facts every layer shares (factsgen: facts.gen.go).
//
// The generator is pinned as a Go tool in tools.go.mod so that its dependencies never enter
// the main module's graph.
package openapi

import _ "embed"

//go:generate go tool -modfile=tools.go.mod oapi-codegen -config codegen.yaml harness.yaml
//go:generate go run ./factsgen harness.yaml ../sdk/api/facts.gen.go ../console/static/facts.gen.js

// Document is harness.yaml as committed: servers embed it to publish it, and tests load it
// with an OpenAPI 3.1 validator to check real responses against it.
//
//go:embed harness.yaml
var Document []byte

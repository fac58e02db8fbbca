module example.com/sdk-consumer

go 1.24

require github.com/harness-edge/harness-edge/sdk v0.0.0-00010101000000-000000000000

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/go-logr/logr v1.4.2 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.7 // indirect
	github.com/oapi-codegen/runtime v1.3.1 // indirect
	github.com/tmaxmax/go-sse v0.10.0 // indirect
	go.opentelemetry.io/otel v1.28.0 // indirect
	go.opentelemetry.io/otel/metric v1.28.0 // indirect
	go.opentelemetry.io/otel/trace v1.28.0 // indirect
	go.yaml.in/yaml/v3 v3.0.2 // indirect
)

// Until the SDK's first release: the SDK of this clone. After it, drop this line and
// `go get github.com/harness-edge/harness-edge/sdk@latest`.
replace github.com/harness-edge/harness-edge/sdk => ../../sdk

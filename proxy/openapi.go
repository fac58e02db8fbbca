package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/harness-edge/harness-edge/openapi"
)

// The OpenAPI document is served from the binary (an extension): GET /v1/openapi.yaml answers
// openapi/harness.yaml byte for byte, GET /v1/openapi.json the same document as JSON,
// converted on first use and kept.

const contentTypeYAML = "application/yaml"

func (h *Handler) openAPIYAML(w http.ResponseWriter, _ *http.Request) {
	writeDocument(w, contentTypeYAML, openapi.Document)
}

func (h *Handler) openAPIJSON(w http.ResponseWriter, r *http.Request) {
	doc, err := openAPIDocumentJSON()
	if err != nil {
		h.writeError(w, r, err) // only a harness.yaml that does not parse, which tests rule out
		return
	}
	writeDocument(w, contentTypeJSON, doc)
}

func writeDocument(w http.ResponseWriter, contentType string, body []byte) {
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// openAPIDocumentJSON converts the embedded document once.
var openAPIDocumentJSON = sync.OnceValues(func() ([]byte, error) {
	return yamlToJSON(openapi.Document)
})

// yamlToJSON converts a YAML document whose mapping keys are all scalars (as an OpenAPI
// document's are) to compact JSON.
func yamlToJSON(doc []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	v, err := jsonCompatible(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// jsonCompatible turns the map[any]any that YAML gives for mappings with non-string keys (a
// response code written 200 rather than "200") into map[string]any, recursively.
func jsonCompatible(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			c, err := jsonCompatible(item)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			c, err := jsonCompatible(item)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case string, int, int64, uint64, float64, bool:
				out[fmt.Sprint(k)] = c
			default:
				return nil, fmt.Errorf("OpenAPI document: mapping key %v (%T) has no JSON form", k, k)
			}
		}
		return out, nil
	case []any:
		for i, item := range v {
			c, err := jsonCompatible(item)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	default:
		return v, nil
	}
}

package proxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The non-reflective decoders (jsonscan.go) must answer exactly as the reflective ones they
// replaced (decode_reference_test.go): the same values, and for bad input the same error — the
// same message, field pointer and reason, found in the same order. These targets compare them
// on every input; they run over their seeds as tests and explore with
// `go test -fuzz=FuzzDecodersMatchTheReflectiveReference ./proxy/`.

func addDifferentialSeeds(f *testing.F) {
	addBodySeeds(f)
	for _, s := range []string{
		` { "conversationId" : "c" , "providerId":"mock" ,"input" : "x" , "config" : { "a" : [ 1 , 2.50 , -0 , 1e-400 , true , null , { } , [ ] ] } } `,
		`{"conversationId":"c","conversationId":"d","providerId":"mock","input":"x"}`,
		`{"conversationI\u0064":"c","providerId":"mock","input":"\u00e9\ud83d\ude00\n\"","idempotencyKey":"k\u0000"}`,
		`{"conversationId":"c","providerId":"mock","input":"x","requiredCapabilities":[]}`,
		`{"conversationId":"c","providerId":"mock","input":"x","requiredCapabilities":["a",""]}`,
		`{"conversationId":"c","providerId":"mock","input":"x","requiredCapabilities":["a",1]}`,
		`{"conversationId":"c","providerId":"mock","input":"x","requiredCapabilities":["a","b","c","d","e","f","g","h","i"]}`,
		`{"conversationId":"c","providerId":"mock","input":"x","config":[]}`,
		`{"conversationId":"c","providerId":"mock","input":"x","config":{"\u00ff\xfe":"\xc3\x28"}}`,
		`{"conversationId":"c","providerId":"mock","input":"x","idempotencyKey":"` + strings.Repeat("k", 201) + `"}`,
		`{"conversationId":"","providerId":"","input":null}`,
		`{"INPUT":"x","conversationId":"c","providerId":"mock"}`,
		`{"approved":false,"value":{"a":[{"b":1e308}]},"metadata":{"k":"v"}}`,
		`{"value":-1e309}`, `{"value":"\ud800\udc00"}`, "\t\n{}\r ", "{} x", `{"a":1,}`,
		`{"metadata":{"a":1,"a":2}}`, `{"reason":"` + strings.Repeat("é", 501) + `"}`,
		strings.Repeat("[", 66) + strings.Repeat("]", 66),
		`{"config":` + strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64) + `}`,
	} {
		f.Add([]byte(s))
	}
}

func FuzzDecodersMatchTheReflectiveReference(f *testing.F) {
	addDifferentialSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		same := func(what string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s of %q:\n got  %#v\n want %#v", what, body, got, want)
			}
		}
		{
			got, gotErr := decodeMembers(body)
			want, wantErr := refDecodeMembers(body)
			same("decodeMembers", got, want)
			same("decodeMembers error", gotErr, wantErr)
		}
		{
			got, gotErr := decodeStartExecutionRequest(body, fuzzMaxCapabilities)
			want, wantErr := refDecodeStartExecutionRequest(body, fuzzMaxCapabilities)
			same("decodeStartExecutionRequest", got, want)
			same("decodeStartExecutionRequest error", gotErr, wantErr)
		}
		{
			got, gotErr := decodeConversationRequest(body)
			want, wantErr := refDecodeConversationRequest(body)
			same("decodeConversationRequest", got, want)
			same("decodeConversationRequest error", gotErr, wantErr)
		}
		{
			got, gotErr := decodeCancelRequest(body)
			want, wantErr := refDecodeCancelRequest(body)
			same("decodeCancelRequest", got, want)
			same("decodeCancelRequest error", gotErr, wantErr)
		}
		{
			got, gotBody, gotShape := decodeActionResponse(body)
			want, wantBody, wantShape := refDecodeActionResponse(body)
			same("decodeActionResponse", got, want)
			same("decodeActionResponse body error", gotBody, wantBody)
			same("decodeActionResponse shape error", gotShape, wantShape)
		}
	})
}

// FuzzScanMatchesEncodingJSON compares the value decoder with encoding/json's Unmarshal into
// any on every valid JSON input, whatever its shape (the targets above reach it only through
// the members the decoders read).
func FuzzScanMatchesEncodingJSON(f *testing.F) {
	addDifferentialSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var want any
		wantErr := json.Unmarshal(raw, &want)
		s := validScan{b: raw}
		s.skipSpace()
		got, ok := s.value()
		if ok != (wantErr == nil) {
			t.Fatalf("%q: scan ok=%v, encoding/json error %v", raw, ok, wantErr)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got  %#v\n want %#v", raw, got, want)
		}
	})
}

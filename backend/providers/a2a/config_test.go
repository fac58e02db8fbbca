package a2a

import (
	"os"
	"strings"
	"testing"
)

func TestConfigSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg     Config
		card    string
		wantErr string
	}{
		{cfg: Config{ID: "a", URL: "http://agent:4000"}, card: "http://agent:4000/.well-known/agent-card.json"},
		{cfg: Config{ID: "a", URL: "https://agent/prefix/"}, card: "https://agent/prefix/.well-known/agent-card.json"},
		{cfg: Config{ID: "a", URL: "https://agent/cards/helper.json"}, card: "https://agent/cards/helper.json"},
		{cfg: Config{URL: "http://agent"}, wantErr: "needs an id"},
		{cfg: Config{ID: " a", URL: "http://agent"}, wantErr: "needs an id"},
		{cfg: Config{ID: "a", URL: ""}, wantErr: "want http(s)://host"},
		{cfg: Config{ID: "a", URL: "ftp://agent"}, wantErr: "want http(s)://host"},
		{cfg: Config{ID: "a", URL: "http://user:secret@agent"}, wantErr: "without credentials"},
		{cfg: Config{ID: "a", URL: "http://agent", GoneTimeout: -1}, wantErr: "must not be negative"},
		{cfg: Config{ID: "a", URL: "http://agent", Headers: map[string]string{"X-Key": "a\r\nb"}}, wantErr: "single-line"},
		{cfg: Config{ID: "a", URL: "http://agent", BearerToken: "a\nb"}, wantErr: "single line"},
	} {
		s, err := tc.cfg.settings()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.wantErr)
			}
			if err != nil && tc.cfg.BearerToken != "" && strings.Contains(err.Error(), tc.cfg.BearerToken) {
				t.Errorf("the error quotes the token: %v", err)
			}
			continue
		}
		if err != nil || s.cardURL != tc.card || s.pollInterval != DefaultPollInterval || s.goneTimeout != DefaultGoneTimeout {
			t.Errorf("%+v: settings %+v, %v; want card %s and defaults", tc.cfg, s, err, tc.card)
		}
	}
	s, err := Config{ID: "a", URL: "http://agent", BearerToken: "tok", Headers: map[string]string{"X-Key": "k"}}.settings()
	if err != nil || s.header.Get("Authorization") != "Bearer tok" || s.header.Get("X-Key") != "k" {
		t.Fatalf("headers = %v, %v", s.header, err)
	}
}

// The manifest names the SDK version go.mod actually requires.
func TestManifestSDKVersionMatchesGoMod(t *testing.T) {
	goMod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(goMod), sdkModule+" v"+sdkVersion) {
		t.Fatalf("go.mod does not require %s v%s; update sdkVersion in manifest.go", sdkModule, sdkVersion)
	}
}

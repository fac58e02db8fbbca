package webhook_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/harness-edge/harness-edge/backend/webhook"
)

var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("a test secret of 32 bytes long!!"))

func TestConfigValidation(t *testing.T) {
	for _, sub := range []webhook.Subscription{
		{URL: "ftp://example.com", Secret: secret},
		{URL: "/relative", Secret: secret},
		{URL: "https://example.com", Secret: "whsec_not base64!"},
		{URL: "https://example.com", Secret: "whsec_c2hvcnQ="},
		{URL: "https://example.com", Secret: secret, Events: []string{"run.exploded"}},
	} {
		if _, err := webhook.New(webhook.Config{Subscriptions: []webhook.Subscription{sub}}); err == nil {
			t.Errorf("New accepted %+v", sub)
		}
	}
	if _, err := webhook.New(webhook.Config{Subscriptions: []webhook.Subscription{
		{URL: "https://example.com", Secret: secret, Tenants: []string{""}},
	}}); err == nil || !strings.Contains(err.Error(), "empty tenant") {
		t.Fatalf("an empty tenant name: got %v, want an error", err)
	}
	if _, err := webhook.New(webhook.Config{Subscriptions: []webhook.Subscription{
		{URL: "https://example.com/a", Secret: secret}, {URL: "https://example.com/a", Secret: secret},
	}}); err == nil || !strings.Contains(err.Error(), "subscribed twice") {
		t.Fatalf("one URL subscribed twice: got %v, want an error", err)
	}
}

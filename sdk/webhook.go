package sdk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// WebhookTolerance is how far a notification's webhook-timestamp may be from the receiver's
// clock before VerifyWebhook refuses it (replay protection, Standard Webhooks' default).
const WebhookTolerance = 5 * time.Minute

// Errors VerifyWebhook wraps, to tell a forgery or a replay from a malformed request.
var (
	ErrWebhookSignature = errors.New("webhook: no valid signature")
	ErrWebhookTimestamp = errors.New("webhook: timestamp outside the tolerance")
)

// VerifyWebhook checks a notification sent by a harness-edge runtime (docs/webhooks.md) and
// returns its payload. secret is the subscription's Standard Webhooks secret ("whsec_" +
// base64); header and body are the request's, the body exactly as received. It checks that
// one of the space-separated v1 signatures of webhook-signature is the HMAC-SHA256 of
// "{webhook-id}.{webhook-timestamp}.{body}" (compared in constant time) and that the timestamp
// is within WebhookTolerance of now. Deduplicate on header "webhook-id": delivery is at least
// once.
func VerifyWebhook(secret string, header http.Header, body []byte) (api.WebhookPayload, error) {
	return verifyWebhookAt(secret, header, body, time.Now())
}

func verifyWebhookAt(secret string, header http.Header, body []byte, now time.Time) (api.WebhookPayload, error) {
	var payload api.WebhookPayload
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return payload, errors.New("webhook: the secret must be whsec_ followed by base64")
	}
	id, ts, sigs := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return payload, errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature header")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return payload, fmt.Errorf("webhook: malformed webhook-timestamp %q", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > WebhookTolerance || d < -WebhookTolerance {
		return payload, fmt.Errorf("%w (%s off)", ErrWebhookTimestamp, d.Round(time.Second))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	valid := false
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue // other schemes (v1a, asymmetric) are not ours
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			valid = true
		}
	}
	if !valid {
		return payload, ErrWebhookSignature
	}
	if err := json.Unmarshal(body, &payload); err != nil {
		return payload, fmt.Errorf("webhook: payload: %w", err)
	}
	return payload, nil
}

// WebhookConversationDeleted reads the data of a conversation.deleted notification (its
// payload's Type, from VerifyWebhook): the conversation erased, when, and how many executions
// went with it. body is the request's body, already verified.
func WebhookConversationDeleted(body []byte) (api.ConversationDeletion, error) {
	var n struct {
		Type string                   `json:"type"`
		Data api.ConversationDeletion `json:"data"`
	}
	if err := json.Unmarshal(body, &n); err != nil {
		return api.ConversationDeletion{}, fmt.Errorf("webhook: payload: %w", err)
	}
	if n.Type != string(api.ConversationDeletedTypeConversationDeleted) || n.Data.ConversationID == "" {
		return api.ConversationDeletion{}, fmt.Errorf("webhook: a %q notification, not conversation.deleted", n.Type)
	}
	return n.Data, nil
}

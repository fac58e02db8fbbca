package sdk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The Standard Webhooks specification's test vector (also Svix's): secret, id, timestamp and
// body give this v1 signature.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = int64(1614265330)
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vectorHeader(sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", vectorID)
	h.Set("webhook-timestamp", strconv.FormatInt(vectorTimestamp, 10))
	h.Set("webhook-signature", sig)
	return h
}

func TestVerifyWebhookKnownVector(t *testing.T) {
	at := time.Unix(vectorTimestamp, 0).Add(time.Minute)
	// The body is not a WebhookPayload, so decoding fails after the signature passed: the
	// error must not be a signature error.
	_, err := verifyWebhookAt(vectorSecret, vectorHeader(vectorSignature), []byte(vectorBody), at)
	if errors.Is(err, ErrWebhookSignature) || errors.Is(err, ErrWebhookTimestamp) {
		t.Fatalf("the spec's vector was refused: %v", err)
	}
	// One of several signatures is enough; an unknown scheme is skipped.
	_, err = verifyWebhookAt(vectorSecret, vectorHeader("v1a,AAAA v1,AAAA "+vectorSignature), []byte(vectorBody), at)
	if errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("a valid signature among several was refused: %v", err)
	}
	// A changed body, a wrong signature, an old timestamp are refused.
	if _, err := verifyWebhookAt(vectorSecret, vectorHeader(vectorSignature), []byte(vectorBody+" "), at); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("tampered body: got %v, want ErrWebhookSignature", err)
	}
	if _, err := verifyWebhookAt(vectorSecret, vectorHeader("v1,AAAA"), []byte(vectorBody), at); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("wrong signature: got %v, want ErrWebhookSignature", err)
	}
	if _, err := verifyWebhookAt(vectorSecret, vectorHeader(vectorSignature), []byte(vectorBody), at.Add(10*time.Minute)); !errors.Is(err, ErrWebhookTimestamp) {
		t.Fatalf("replayed after 11 minutes: got %v, want ErrWebhookTimestamp", err)
	}
}

// A payload signed here with crypto/hmac (independently of VerifyWebhook) verifies and decodes.
func TestVerifyWebhookDecodesPayload(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	body := []byte(`{"type":"run.completed","timestamp":"2026-09-02T08:15:30.123Z","data":{"event":{"id":"exec_1:3","executionId":"exec_1","sequence":3,"type":"run.completed","time":"2026-09-02T08:15:30.123Z","data":{"finalOutput":"ok"}},"execution":{"id":"exec_1","conversationId":"conv_1","providerId":"mock","input":"hi","state":"succeeded","requiredCapabilities":[],"effectiveConfig":{},"createdAt":"2026-09-02T08:15:30.000Z","updatedAt":"2026-09-02T08:15:30.123Z"}}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("msg_1." + ts + "." + string(body)))
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	p, err := VerifyWebhook(secret, h, body)
	if err != nil {
		t.Fatalf("VerifyWebhook: %v", err)
	}
	if p.Type != "run.completed" || p.Data.Event.Sequence != 3 || p.Data.Execution.State != "succeeded" {
		t.Fatalf("payload decoded as %+v", p)
	}
	if _, err := VerifyWebhook("whsec_"+base64.StdEncoding.EncodeToString([]byte("another key, another sender!")), h, body); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("another secret: got %v, want ErrWebhookSignature", err)
	}
}

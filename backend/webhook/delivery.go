package webhook

import "time"

// Delivery tunes the sender. Zero fields take the defaults below.
type Delivery struct {
	Workers     int           // concurrent deliveries (across executions); default 8
	Timeout     time.Duration // per request; default 10s
	MinBackoff  time.Duration // cap of the first retry's delay; default 1s
	MaxBackoff  time.Duration // cap of any retry's delay; default 5m
	MaxAttempts int           // attempts before a notification is recorded as failed; default 20
	MaxAge      time.Duration // a notification older than this is not retried again; default 24h
}

// Delivery defaults. With full jitter the delay before retry n is uniform in
// [0, min(MaxBackoff, MinBackoff·2^(n-1))): the 19 retries of 20 attempts wait at most about
// 58 minutes in all (half that on average) before the notification is recorded as failed.
const (
	DefaultWorkers     = 8
	DefaultTimeout     = 10 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultMaxAttempts = 20
	DefaultMaxAge      = 24 * time.Hour
)

func (d Delivery) withDefaults() Delivery {
	if d.Workers <= 0 {
		d.Workers = DefaultWorkers
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	if d.MinBackoff <= 0 {
		d.MinBackoff = DefaultMinBackoff
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = DefaultMaxBackoff
	}
	d.MaxBackoff = max(d.MaxBackoff, d.MinBackoff)
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.MaxAge <= 0 {
		d.MaxAge = DefaultMaxAge
	}
	return d
}

// Observer receives the sender's metrics hooks (Config.Observer). Calls must return quickly.
type Observer interface {
	WebhookDelivered()
	WebhookRetried()
	WebhookFailed()
	// WebhookQueueOldest reports the creation time of the oldest undelivered notification after
	// every scan of the outbox; the zero time when none is waiting.
	WebhookQueueOldest(time.Time)
}

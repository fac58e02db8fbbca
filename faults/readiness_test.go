package faults

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// What a balancer's health check sees: each node's GET /readyz, every 250 ms, during a fault.
// Figures only (when a node left the rotation, when it came back); no invariant.

type readyzSample struct {
	at     time.Time
	status int // 0: no answer
}

type readiness struct {
	stop    context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples map[string][]readyzSample
}

var readyzClient = &http.Client{Timeout: 2 * time.Second} // the balancer's health_timeout

func watchReadiness(nodes []target) *readiness {
	ctx, cancel := context.WithCancel(context.Background())
	r := &readiness{stop: cancel, samples: map[string][]readyzSample{}}
	for _, n := range nodes {
		r.wg.Go(func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				s := readyzSample{at: time.Now()}
				if resp, err := readyzClient.Get(n.base + "/readyz"); err == nil {
					s.status = resp.StatusCode
					resp.Body.Close()
				}
				r.mu.Lock()
				r.samples[n.name] = append(r.samples[n.name], s)
				r.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	return r
}

func (r *readiness) halt() {
	r.stop()
	r.wg.Wait()
}

// notReady is, per node, how long after from its /readyz first answered other than 200 ("–":
// never), and how long after healed it answered 200 for good ("–": it was ready throughout
// after healed; "never": not at the end either).
func (r *readiness) figures(from, healed time.Time) (notReady, readyAgain string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var down, up []string
	for _, name := range slices.Sorted(maps.Keys(r.samples)) {
		samples := r.samples[name]
		first, lastBad := "–", time.Time{}
		for _, s := range samples {
			if s.at.Before(from) || s.status == http.StatusOK {
				continue
			}
			if first == "–" {
				first = fmt.Sprintf("%.1f (%d)", s.at.Sub(from).Seconds(), s.status)
			}
			lastBad = s.at
		}
		again := "–"
		switch {
		case len(samples) > 0 && samples[len(samples)-1].status != http.StatusOK:
			again = "never"
		case lastBad.After(healed):
			again = fmt.Sprintf("%.1f", lastBad.Sub(healed).Seconds())
		}
		down = append(down, name+" "+first)
		up = append(up, name+" "+again)
	}
	return strings.Join(down, ", "), strings.Join(up, ", ")
}

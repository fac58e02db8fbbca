package main

import (
	"flag"
	"strings"
)

// subscribeURL moves the fan-out phases' subscribers to another server than -url. With -url one
// node of a cluster (the execution starts there, so that node owns and runs it) and
// -subscribe-url another node, the lag the phase reports is the cross-node lag: the owner's event
// time (stamped just before the event's commit) → receipt on the other node, through PostgreSQL's
// commit and LISTEN/NOTIFY (docs/scale-out.md).
var subscribeURL = flag.String("subscribe-url", "", "base URL the fan-out phases' subscribers connect to (loopback only; default: -url), e.g. another node of a cluster for the cross-node lag")

// subscribeBase is where subscribers connect, checked to be loopback.
func (l *load) subscribeBase() (string, error) {
	if *subscribeURL == "" {
		return l.cfg.baseURL, nil
	}
	if err := requireLoopback(*subscribeURL); err != nil {
		return "", err
	}
	return strings.TrimSuffix(*subscribeURL, "/"), nil
}

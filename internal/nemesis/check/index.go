package check

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/harness-edge/harness-edge/internal/nemesis/history"
)

// observation is one answered request or final read that showed an
// execution's state: the operations porcupine linearizes.
type observation struct {
	state    string
	updated  time.Time
	invoke   time.Time
	complete time.Time
	line     int
	op       string
}

// sighting is one event line with its RuntimeEvent decoded.
type sighting struct {
	line *history.Line
	ev   *history.Event
	time time.Time       // the RuntimeEvent's own time (server clock), else receipt
	data json.RawMessage // the RuntimeEvent's data member
}

type execution struct {
	id, conversation, tenant string
	provider                 string
	input                    *string
	acks                     []*history.Request // 2xx starts that answered this id
	createdBy                []*history.Request // every start attempt with its conversation and key
	obs                      []observation
	finals                   []*history.Final
	finalSnaps               []snapshot
	sightings                []sighting
	waitingFor               []string
	policy                   string
	lastUsage                *usageFigures
	// endUsage is the usage of a terminal snapshot a client read before the final reads
	// (endSeen): complete, so a deleted execution's usage stays exact.
	endUsage *usageFigures
	endSeen  bool
	// noUsage: a mock execution started without config.usage, which reports none.
	noUsage bool
	// Derived once every line is read (index.settle): whether a start
	// acknowledged it, the latest its creation can be, and the unfinished
	// observation that began last.
	acked          bool
	createdHi      time.Time
	lastUnfinished *observation
}

// created is the interval the execution's creation lies in: from the first
// attempt of its key to the first acknowledgement.
func (x *execution) created() (lo, hi time.Time, ok bool) {
	if len(x.acks) == 0 {
		return lo, hi, false
	}
	for _, r := range x.acks {
		if hi.IsZero() || r.Complete.Before(hi) {
			hi = r.Complete
		}
		if lo.IsZero() || r.Invoke.Before(lo) {
			lo = r.Invoke
		}
	}
	for _, r := range x.createdBy {
		if r.Invoke.Before(lo) {
			lo = r.Invoke
		}
	}
	return lo, hi, true
}

// terminalState is the execution's final state as the final reads say ("" if
// none read it).
func (x *execution) terminalState() string {
	for _, s := range x.finalSnaps {
		if s.State != "" {
			return s.State
		}
	}
	for _, f := range x.finals {
		if f.State != "" {
			return f.State
		}
	}
	return ""
}

type conversation struct {
	id, policy, tenant string
	// deleted: erased, as far as the history can tell (deletions.go, settleDeletions);
	// deletedAt is when the first delete that may have erased it was sent.
	deleted   bool
	deletedAt time.Time
	deletion  deletion
}

type faultWindow struct {
	fault, target      string
	start, end         time.Time
	startLine, endLine int
}

type index struct {
	lines         []history.Line
	run           *history.Run
	execs         map[string]*execution
	order         []string // execution ids in first-seen order
	conversations map[string]*conversation
	requests      []*history.Request
	lineOf        map[*history.Request]int
	finalLineOf   map[*history.Final]int
	events        []*history.Line
	faults        []faultWindow
	finals        []*history.Line
	end           time.Time
	replayed      int // events read in JSON replays
	finalReplays  []finalReplay
	// computed on first use
	chainList      []*chain
	byConversation map[string][]*execution
}

func (ix *index) exec(id string) *execution {
	x := ix.execs[id]
	if x == nil {
		x = &execution{id: id}
		ix.execs[id] = x
		ix.order = append(ix.order, id)
	}
	return x
}

func (ix *index) conv(id string) *conversation {
	c := ix.conversations[id]
	if c == nil {
		c = &conversation{id: id}
		ix.conversations[id] = c
	}
	return c
}

func buildIndex(lines []history.Line) *index {
	ix := &index{lines: lines, execs: map[string]*execution{}, conversations: map[string]*conversation{}, lineOf: map[*history.Request]int{}, finalLineOf: map[*history.Final]int{}}
	for i := range lines {
		l := &lines[i]
		if t := lineTime(l); t.After(ix.end) {
			ix.end = t
		}
		switch l.Kind {
		case history.KindRun:
			if ix.run == nil {
				ix.run = l.Run
			}
		case history.KindRequest:
			ix.addRequest(l)
		case history.KindEvent:
			ix.addEvent(l)
		case history.KindFault:
			ix.addFault(l)
		case history.KindFinal:
			ix.addFinal(l)
		}
	}
	for i := range ix.faults {
		if ix.faults[i].end.IsZero() {
			ix.faults[i].end = ix.end
		}
	}
	ix.attributeAttempts()
	ix.settleDeletions()
	ix.addAbsentReads()
	ix.addTerminalReceipts()
	ix.settle()
	return ix
}

func lineTime(l *history.Line) time.Time {
	switch l.Kind {
	case history.KindRun:
		return l.Run.T
	case history.KindRequest:
		return l.Request.T
	case history.KindEvent:
		return l.Event.T
	case history.KindFault:
		return l.Fault.T
	case history.KindFinal:
		return l.Final.T
	}
	return time.Time{}
}

func (ix *index) addRequest(l *history.Line) {
	r := l.Request
	ix.requests = append(ix.requests, r)
	ix.lineOf[r] = l.No
	ix.addDeletionRequest(r) // answered or not: deletions.go
	if !r.OK() {
		return
	}
	switch r.Op {
	case "events":
		ix.addReplay(l)
		return
	case "createConversation":
		var a struct {
			ID         string `json:"id"`
			BusyPolicy string `json:"busyPolicy"`
		}
		if json.Unmarshal(r.Answer, &a) == nil && a.ID != "" {
			c := ix.conv(a.ID)
			c.policy, c.tenant = a.BusyPolicy, r.Tenant
		}
		return
	case "deleteConversation", "getConversation":
		return // deletions.go
	}
	for _, s := range answerSnapshots(r.Answer) {
		x := ix.exec(s.ID)
		if x.conversation == "" {
			x.conversation = s.ConversationID
		}
		if x.provider == "" {
			x.provider = s.ProviderID
		}
		if x.input == nil {
			x.input = s.Input
		}
		if s.Usage != nil && !r.Final {
			x.lastUsage = s.Usage
		}
		if isTerminal(s.State) && !r.Final {
			x.endUsage, x.endSeen = s.Usage, true // its usage is complete (usageOf)
		}
		x.obs = append(x.obs, observation{state: s.State, updated: s.UpdatedAt, invoke: r.Invoke, complete: r.Complete, line: l.No, op: r.Op})
		if r.Op == "start" {
			x.acks = append(x.acks, r)
			if x.tenant == "" {
				x.tenant = r.Tenant
			}
			var b startBody
			_ = json.Unmarshal(r.Body, &b)
			if len(x.acks) == 1 || r.Complete.Before(x.acks[0].Complete) {
				x.waitingFor, x.policy = s.WaitingFor, b.BusyPolicy
			}
			x.noUsage = b.ProviderID == "mock" && len(b.Config.Usage) == 0
		}
	}
}

func (ix *index) addEvent(l *history.Line) {
	e := l.Event
	if e.ExecutionID == "" {
		ix.events = append(ix.events, l) // a stream.gap or a deletion marker: kept for the stream check
		ix.addDeletionMarker(l)
		return
	}
	ix.events = append(ix.events, l)
	x := ix.exec(e.ExecutionID)
	s := sighting{line: l, ev: e, time: e.T}
	var whole struct {
		ExecutionID string          `json:"executionId"`
		Time        time.Time       `json:"time"`
		Data        json.RawMessage `json:"data"`
	}
	if json.Unmarshal(e.Data, &whole) == nil && whole.ExecutionID != "" {
		s.data = whole.Data
		if !whole.Time.IsZero() {
			s.time = whole.Time
		}
	} else {
		s.data = e.Data
	}
	if e.Type == "provider.event" {
		var u struct {
			Provider string        `json:"provider"`
			Type     string        `json:"type"`
			Usage    *usageFigures `json:"usage"`
		}
		if json.Unmarshal(s.data, &u) == nil && u.Provider == "harness" && u.Type == "usage" && u.Usage != nil {
			if x.lastUsage == nil || u.Usage.TotalTokens >= x.lastUsage.TotalTokens {
				x.lastUsage = u.Usage
			}
		}
	}
	x.sightings = append(x.sightings, s)
}

func (ix *index) addFault(l *history.Line) {
	f := l.Fault
	// cont ends a stop and heal a cut, whichever phase they are written with.
	kinds, closer := closes[f.Fault]
	if !closer && f.Phase != history.PhaseEnd {
		ix.faults = append(ix.faults, faultWindow{fault: f.Fault, target: f.Target, start: f.T, startLine: l.No})
		return
	}
	if !closer {
		kinds = []string{f.Fault}
	}
	for i := range ix.faults {
		w := &ix.faults[i]
		if slices.Contains(kinds, w.fault) && (w.target == f.Target || f.Target == "") && w.endLine == 0 {
			w.end, w.endLine = f.T, l.No
			return
		}
	}
}

// closes: the faults that end others.
var closes = map[string][]string{"cont": {"stop"}, "heal": {"cut-silent", "cut-reset"}}

func (ix *index) addFinal(l *history.Line) {
	f := l.Final
	ix.finals = append(ix.finals, l)
	ix.finalLineOf[f] = l.No
	if f.ExecutionID == "" {
		return
	}
	x := ix.exec(f.ExecutionID)
	x.finals = append(x.finals, f)
	if x.tenant == "" {
		x.tenant = f.Tenant
	}
	if x.conversation == "" {
		x.conversation = f.ConversationID
	}
	var s snapshot
	if json.Unmarshal(f.Snapshot, &s) == nil && s.ID != "" {
		x.finalSnaps = append(x.finalSnaps, s)
		if s.State != "" {
			x.obs = append(x.obs, observation{state: s.State, updated: s.UpdatedAt, invoke: f.T, complete: f.T, line: l.No, op: "final"})
		}
	} else if f.State != "" {
		x.obs = append(x.obs, observation{state: f.State, invoke: f.T, complete: f.T, line: l.No, op: "final"})
	}
}

// attributeAttempts ties every start attempt to the execution its key (in
// its conversation) created, so an attempt that timed out counts towards
// when that execution may have been created.
func (ix *index) attributeAttempts() {
	type key struct{ conv, key string }
	byKey := map[key]*execution{}
	for _, id := range ix.order {
		x := ix.execs[id]
		for _, r := range x.acks {
			var b startBody
			if json.Unmarshal(r.Body, &b) == nil && b.IdempotencyKey != "" {
				byKey[key{b.ConversationID, b.IdempotencyKey}] = x
			}
		}
	}
	for _, r := range ix.requests {
		if r.Op != "start" {
			continue
		}
		var b startBody
		if json.Unmarshal(r.Body, &b) != nil || b.IdempotencyKey == "" {
			continue
		}
		if x := byKey[key{b.ConversationID, b.IdempotencyKey}]; x != nil {
			x.createdBy = append(x.createdBy, r)
		}
	}
}

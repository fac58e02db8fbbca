package check

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

type respondedData struct {
	ActionID string `json:"actionId"`
	Approved *bool  `json:"approved"`
	Decision string `json:"decision"`
	Message  string `json:"message"`
	Actor    *struct {
		Kind string `json:"kind,omitempty"`
		ID   string `json:"id"`
	} `json:"actor"`
}

type requiredData struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type actionKey struct{ exec, action string }

type actionFacts struct {
	required  *sighting
	responded map[int64]sighting // by sequence: one answer per sequence, across views
	people    []int              // lines of respond requests answered 2xx
}

// actionIDFromPath reads {actionId} from …/actions/{actionId}:respond.
func actionIDFromPath(path string) string {
	i := strings.Index(path, "/actions/")
	if i < 0 {
		return ""
	}
	rest := path[i+len("/actions/"):]
	if j := strings.Index(rest, ":respond"); j >= 0 {
		return rest[:j]
	}
	return ""
}

func execIDFromPath(path string) string {
	const p = "/v1/executions/"
	i := strings.Index(path, p)
	if i < 0 {
		return ""
	}
	rest := path[i+len(p):]
	if j := strings.IndexAny(rest, "/:?"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// checkApprovals: between a person, a standing rule and the expiry exactly
// one answer wins each action, and an expiry fails closed (rejects), never
// before the action's expiresAt.
func checkApprovals(ix *index, rep *Report) {
	actions := map[actionKey]*actionFacts{}
	get := func(k actionKey) *actionFacts {
		a := actions[k]
		if a == nil {
			a = &actionFacts{responded: map[int64]sighting{}}
			actions[k] = a
		}
		return a
	}
	for _, id := range ix.order {
		for _, s := range ix.execs[id].sightings {
			switch s.ev.Type {
			case "action.required":
				var d requiredData
				if json.Unmarshal(s.data, &d) != nil || d.ID == "" {
					continue
				}
				if a := get(actionKey{id, d.ID}); a.required == nil {
					s := s // the first sighting names it, as the stream check does
					a.required = &s
				}
			case "action.responded":
				var d respondedData
				if json.Unmarshal(s.data, &d) == nil && d.ActionID != "" {
					a := get(actionKey{id, d.ActionID})
					if _, seen := a.responded[s.ev.Sequence]; !seen {
						a.responded[s.ev.Sequence] = s
					}
				}
			}
		}
	}
	for _, r := range ix.requests {
		if r.Op != "respond" || !r.OK() {
			continue
		}
		exec := r.ExecutionID
		if exec == "" {
			exec = execIDFromPath(r.Path)
		}
		if act := actionIDFromPath(r.Path); act != "" {
			a := get(actionKey{exec, act})
			a.people = append(a.people, ix.lineOf[r])
		}
	}
	keys := make([]actionKey, 0, len(actions))
	for k := range actions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].exec+keys[i].action < keys[j].exec+keys[j].action })
	for _, k := range keys {
		checkAction(k, actions[k], rep)
		checkExpiryEndedMock(ix, k, actions[k], rep)
	}
}

// checkExpiryEndedMock: the mock fails its execution on a reject (and so on
// an expiry, which rejects): one that expired and still succeeded did not
// fail closed. (An ACP agent gets its reject option and may go on; only the
// mock's outcome is fixed.)
func checkExpiryEndedMock(ix *index, k actionKey, a *actionFacts, rep *Report) {
	x := ix.execs[k.exec]
	if x == nil || x.provider != "mock" || x.terminalState() != "succeeded" {
		return
	}
	for _, s := range a.responded {
		var d respondedData
		_ = json.Unmarshal(s.data, &d)
		expired := (d.Actor != nil && d.Actor.Kind == "expiry") || strings.HasPrefix(d.Message, expiryMessage)
		if expired && d.Decision == "reject" {
			rep.add(ExpiryNotClosed, k.exec, []int{s.line.No}, "action %s expired (rejected), yet the mock execution succeeded", k.action)
		}
	}
}

func checkAction(k actionKey, a *actionFacts, rep *Report) {
	var answers []sighting
	for _, s := range a.responded {
		answers = append(answers, s)
	}
	sort.Slice(answers, func(i, j int) bool { return answers[i].ev.Sequence < answers[j].ev.Sequence })
	if len(answers) > 1 {
		rep.add(TwoWinners, k.exec, linesOf(answers), "action %s answered %d times (action.responded at sequences %d and %d)", k.action, len(answers), answers[0].ev.Sequence, answers[1].ev.Sequence)
	}
	if len(a.people) > 1 {
		rep.add(TwoWinners, k.exec, a.people, "action %s: %d respond requests were each answered 200", k.action, len(a.people))
	}
	for _, s := range answers {
		var d respondedData
		_ = json.Unmarshal(s.data, &d)
		kind := ""
		if d.Actor != nil {
			kind = d.Actor.Kind
		}
		expired := strings.HasPrefix(d.Message, expiryMessage)
		if expired && kind != "expiry" {
			rep.add(AnswerMisattributed, k.exec, []int{s.line.No}, "action %s: the expiry's answer (%q) names the actor %s, not {kind: expiry}", k.action, d.Message, actorString(d))
			kind = "expiry"
		}
		if (kind == "rule" || kind == "expiry") && len(a.people) > 0 {
			rep.add(TwoWinners, k.exec, append([]int{s.line.No}, a.people...), "action %s was answered by %s and a person's respond was answered 200 too", k.action, kind)
		}
		if kind != "expiry" {
			continue
		}
		if d.Decision != "reject" || (d.Approved != nil && *d.Approved) {
			rep.add(ExpiryNotClosed, k.exec, []int{s.line.No}, "action %s expired with decision %q: an expiry must reject", k.action, d.Decision)
		}
		if a.required != nil {
			var req requiredData
			if json.Unmarshal(a.required.data, &req) == nil && !req.ExpiresAt.IsZero() && s.time.Before(req.ExpiresAt) {
				rep.add(ExpiryEarly, k.exec, []int{a.required.line.No, s.line.No}, "action %s expired at %s, before its expiresAt %s", k.action, s.time.Format(time.RFC3339Nano), req.ExpiresAt.Format(time.RFC3339Nano))
			}
		}
	}
}

// expiryMessage begins the message of an expiry's answer (docs/protocol.md,
// "Expiry"), whoever the event names as its actor.
const expiryMessage = "No answer before the action expired"

func actorString(d respondedData) string {
	if d.Actor == nil {
		return "none"
	}
	b, _ := json.Marshal(d.Actor)
	return string(b)
}

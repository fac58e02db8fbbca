package acp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/harness-edge/harness-edge/sdk/api"
)

// Continuity: a conversation's executions prompt one native ACP session, so the agent remembers
// the conversation (docs/acp.md "Conversations"). Its id is stored with the conversation, so a
// process that did not serve the previous turn — after an eviction, a restart of the edge, or on
// another node — continues it with session/resume or session/load, whichever the agent offers.

// conversationState is what the provider stores for a conversation (Run.SaveState under the
// conversation id, in the provider's namespace, in either store): the native session that
// remembers the conversation, the cwd it belongs to (agents keep their sessions per directory:
// Claude Code under its project directory), and the execution that last prompted it. The last
// tells a warm process whether it is still the conversation's latest: another node, or a fresh
// process after an eviction, may have continued the session since, and what this process holds
// in memory would then be out of date.
type conversationState struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Execution string `json:"executionId"`
	// The session's cumulative cost at the end of its last turn (usage.go): the baseline of the
	// next turn's cost. Absent until the agent reports a cost.
	CostMicros int64  `json:"costMicros,omitempty"`
	Currency   string `json:"currency,omitempty"`
}

// How a turn got its native session: the event session.attached says which.
const (
	viaWarm   = "warm"   // the process that served the conversation's previous turn
	viaResume = "resume" // a new process, session/resume of the stored session
	viaLoad   = "load"   // a new process, session/load of the stored session (history replayed)
	viaNew    = "new"    // a new native session: the agent remembers nothing of earlier turns
)

func (t *turn) loadState() (*conversationState, error) {
	raw, found, err := t.run.LoadState(t.conversation)
	if err != nil || !found {
		return nil, err
	}
	var st conversationState
	if json.Unmarshal(raw, &st) != nil || st.SessionID == "" {
		return nil, nil // not ours to read: start afresh, and the next save replaces it
	}
	return &st, nil
}

func (t *turn) saveState(st conversationState) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return t.run.SaveState(t.conversation, raw)
}

// obtain gives the turn a process: the conversation's warm one if it is still the latest to
// serve the stored session, else a new one, spawned in the conversation's working directory and
// initialized. stored is the conversation's state (nil: none yet).
func (t *turn) obtain() (s *session, stored *conversationState, warm bool, err error) {
	stored, err = t.loadState()
	if err != nil {
		return nil, nil, false, err
	}
	// The working directory is checked on every turn, a warm process's too: its session's cwd is
	// the path, and what the path names may have been swapped since the last turn. A refused
	// directory ends the warm process as well — it was started in what the path named then.
	cwd, err := t.p.workingDir(t.conversation)
	if err != nil {
		if warmed := t.p.pool.take(t.conversation); warmed != nil {
			_ = t.p.pool.retire(warmed)
		}
		return nil, nil, false, err
	}
	if warmed := t.p.pool.take(t.conversation); warmed != nil {
		latest := stored != nil && stored.SessionID == string(warmed.native()) && stored.Execution == warmed.servedLast()
		if warmed.healthy() && latest {
			if !t.adopt(warmed) {
				t.p.pool.checkin(t.conversation, warmed)
				return nil, nil, false, context.Canceled
			}
			return warmed, stored, true, nil
		}
		_ = t.p.pool.retire(warmed) // out of date, or it died while warm
	}
	if err := t.p.pool.reserve(t.stopping, t.waitingForProcess); err != nil {
		return nil, nil, false, err
	}
	s = newSession(t.p.settings, t.p.observe, cwd, t.executionID())
	if !t.adopt(s) {
		_ = t.p.pool.retire(s) // frees the reservation; nothing was spawned
		return nil, nil, false, context.Canceled
	}
	if err := s.spawn(t.agentEnv()); err != nil {
		return nil, nil, false, err
	}
	if _, err := s.initialize(t.stopping); err != nil {
		return nil, nil, false, err
	}
	return s, stored, false, nil
}

// attach gives a new process its native session — the stored one continued if the agent can,
// else a new one — records it with the conversation before the prompt (so that a crash in the
// middle of the turn can still be continued), and tells the caller with session.attached.
func (t *turn) attach(s *session, stored *conversationState, warm bool) error {
	attached := api.JSONObject{}
	switch {
	case warm:
		attached["via"] = viaWarm
	case stored != nil && stored.Cwd == s.cwd && s.capabilities().canContinue():
		method := s.capabilities().continuation()
		replayed, err := s.continueNative(acpsdk.SessionId(stored.SessionID), method)
		switch {
		case err == nil:
			attached["via"] = viaResume
			if method == acpsdk.AgentMethodSessionLoad {
				attached["via"], attached["replayedUpdates"] = viaLoad, replayed
			}
		case !s.healthy():
			return err
		default:
			// The agent answered, but will not continue it (ACP's -32002 "session not found",
			// or anything else): the turn goes on in a new session, and says what it lost.
			attached["previousSessionId"] = stored.SessionID
		}
	case stored != nil:
		// The agent cannot continue a session in a new process, or the stored one belongs to
		// another directory (conversation_root changed).
		attached["previousSessionId"] = stored.SessionID
	}
	if attached["via"] == nil {
		if err := s.newNative(); err != nil {
			return err
		}
		attached["via"] = viaNew
	}
	id := s.native()
	t.usage.begin(stored, id)
	if err := t.saveState(t.usage.carry(conversationState{SessionID: string(id), Cwd: s.cwd, Execution: t.executionID()})); err != nil {
		return err
	}
	s.setNative(id, t.executionID())
	attached["sessionId"] = string(id)
	return t.emitNative("session.attached", attached)
}

// newNative asks the agent for a new native session in the process's cwd.
func (s *session) newNative() error {
	created, err := sendRequest[acpsdk.NewSessionResponse](s, context.Background(), acpsdk.AgentMethodSessionNew,
		acpsdk.NewSessionRequest{Cwd: s.cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		return err
	}
	if created.SessionId == "" {
		return errNoSession
	}
	s.setNative(created.SessionId, s.servedLast())
	return nil
}

// continueNative asks the agent to continue session id with method (session/resume or
// session/load) and returns how many updates session/load replayed: they are the conversation's
// history, already recorded by earlier executions, and are counted rather than emitted
// (onSessionUpdate). The SDK hands us the answer only after every notification before it has
// been handled, so the count is complete when the call returns.
func (s *session) continueNative(id acpsdk.SessionId, method string) (replayed int, err error) {
	s.wire.expectSession(string(id)) // the replay names it before the answer does
	switch method {
	case acpsdk.AgentMethodSessionResume:
		_, err = sendRequest[acpsdk.ResumeSessionResponse](s, context.Background(), method,
			acpsdk.ResumeSessionRequest{SessionId: id, Cwd: s.cwd, McpServers: []acpsdk.McpServer{}})
	default:
		s.setReplaying(true)
		_, err = sendRequest[acpsdk.LoadSessionResponse](s, context.Background(), method,
			acpsdk.LoadSessionRequest{SessionId: id, Cwd: s.cwd, McpServers: []acpsdk.McpServer{}})
		replayed = s.setReplaying(false)
	}
	if err != nil {
		return replayed, err
	}
	s.setNative(id, s.servedLast())
	return replayed, nil
}

// setReplaying starts or ends a replay and returns the number of updates counted in it.
func (s *session) setReplaying(on bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replaying = on
	n := s.replayed
	if on {
		s.replayed = 0
	}
	return n
}

// countReplayed counts an update that arrives during a replay and reports whether it did.
func (s *session) countReplayed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaying {
		s.replayed++
	}
	return s.replaying
}

// workingDir is the directory the conversation's agent works in: <conversation_root>/<id>,
// created 0700 on first use and checked on every turn (workspace.go), or the configured cwd
// when no root is configured.
func (p *Provider) workingDir(conversation string) (string, error) {
	if p.workspaces == nil {
		return p.settings.cwd, nil
	}
	return p.workspaces.prepare(conversation)
}

// conversationDir is <root>/<id> when id is one plain path element (the runtime's ids always
// are: conv_ and hex digits).
func conversationDir(root, id string) (string, bool) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\\\x00") {
		return "", false
	}
	return filepath.Join(root, id), true
}

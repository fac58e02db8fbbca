package approvals

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/harness-edge/harness-edge/backend/store"
	"github.com/harness-edge/harness-edge/sdk/api"
)

// Standing rules (docs/protocol.md, "Standing rules"). A rule answers an approval at once when
// its match fits what the approval is about: every member it names must fit — providerId and
// toolKind exactly, title as a pattern over the whole title in which `*` stands for any run of
// characters (`\*` is a literal star, `\\` a backslash). A rule must name what it is about: a
// toolKind or a title that is more than stars, so that no rule approves everything by accident.
// Input actions are never answered by a rule (their answer is a value someone gives).
//
// When several rules match, a reject wins over any approve (a standing "no" is never undone by
// a broader "yes"); among rules of the same decision, the conversation's come before the
// tenant's and the configured ones, and the oldest first.

// ToolKinds are ACP's ToolKind values (the acp provider's tests hold this list to its SDK's).
var ToolKinds = []string{"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}

// Subject is what an action is about, as rules see it.
type Subject struct {
	ProviderID string
	Kind       api.ActionKind
	Title      string
	ToolKind   string
}

// SubjectOf is req's subject; providerID is its execution's provider.
func SubjectOf(providerID string, req api.ActionRequest) Subject {
	s := Subject{ProviderID: providerID, Kind: req.Kind, Title: req.Title}
	if req.ToolKind != nil {
		s.ToolKind = *req.ToolKind
	}
	return s
}

// MaxMessageUnits bounds a message (of an answer or a rule) in UTF-16 code units.
const MaxMessageUnits = 2000

// CheckRule returns why in cannot be a rule: pointers into the createActionRule body.
// knownProvider reports whether a provider id is registered.
func CheckRule(in api.CreateActionRuleRequest, knownProvider func(string) bool) error {
	m := in.Match
	if m.ToolKind == nil && (m.Title == nil || onlyStars(*m.Title)) {
		return invalid("/match", "a rule must name what it is about: a toolKind, or a title with more than *")
	}
	if m.ProviderID != nil && !knownProvider(*m.ProviderID) {
		return invalid("/match/providerId", "no provider %q is registered", *m.ProviderID)
	}
	if m.ToolKind != nil && !slices.Contains(ToolKinds, *m.ToolKind) {
		err := invalid("/match/toolKind", "must be one of %s", strings.Join(ToolKinds, ", "))
		err.Suggestion = Closest(*m.ToolKind, ToolKinds)
		return err
	}
	if m.Title != nil {
		if n := len(utf16.Encode([]rune(*m.Title))); n == 0 || n > 500 {
			return invalid("/match/title", "must be 1 to 500 characters")
		}
		if _, err := titlePattern(*m.Title); err != nil {
			return invalid("/match/title", "%s", err.Error())
		}
	}
	if in.Decision != api.RuleDecisionApprove && in.Decision != api.RuleDecisionReject {
		return invalid("/decision", "must be approve or reject")
	}
	if in.Message != nil {
		if n := len(utf16.Encode([]rune(*in.Message))); n == 0 || n > MaxMessageUnits {
			return invalid("/message", "must be 1 to %d characters", MaxMessageUnits)
		}
	}
	return nil
}

func onlyStars(title string) bool { return strings.Trim(title, "*") == "" }

// ExactTitle is the pattern that matches title and nothing else.
func ExactTitle(title string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`).Replace(title)
}

type patternError string

func (e patternError) Error() string { return string(e) }

// titlePattern compiles a title pattern: `*` is any run of characters, `\*` and `\\` are a
// literal star and backslash; a backslash before anything else is refused (it escapes nothing).
func titlePattern(pattern string) (*regexp.Regexp, error) {
	var re strings.Builder
	re.WriteString(`^(?s:`)
	literal := strings.Builder{}
	flush := func() {
		re.WriteString(regexp.QuoteMeta(literal.String()))
		literal.Reset()
	}
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			flush()
			re.WriteString(`.*`)
		case '\\':
			if i+1 == len(pattern) || (pattern[i+1] != '*' && pattern[i+1] != '\\') {
				return nil, patternError(`a backslash escapes only * and \ (write \* or \\)`)
			}
			i++
			literal.WriteByte(pattern[i])
		default:
			literal.WriteByte(c)
		}
	}
	flush()
	re.WriteString(`)$`)
	return regexp.Compile(re.String())
}

// Matches reports whether m fits s.
func Matches(m api.ActionRuleMatch, s Subject) bool {
	if s.Kind != api.ActionKindApproval {
		return false
	}
	if m.ProviderID != nil && *m.ProviderID != s.ProviderID {
		return false
	}
	if m.ToolKind != nil && *m.ToolKind != s.ToolKind {
		return false
	}
	if m.Title != nil {
		re, err := titlePattern(*m.Title)
		if err != nil || !re.MatchString(s.Title) {
			return false
		}
	}
	return m.ToolKind != nil || (m.Title != nil && !onlyStars(*m.Title)) // never everything
}

// Choose is the rule that answers an action about s, or nil: among the rules that are in force
// and match, the first reject, else the first approve. rules come in precedence order: the
// conversation's, then the tenant's, then the configured ones, each oldest first.
func Choose(rules []store.Rule, s Subject) *store.Rule {
	var approve *store.Rule
	for i := range rules {
		r := &rules[i]
		if r.RevokedAt != nil || !Matches(r.Match, s) {
			continue
		}
		if r.Decision == api.RuleDecisionReject {
			return r
		}
		if approve == nil {
			approve = r
		}
	}
	return approve
}

// Precedence orders rules for Choose: conversation rules first, then tenant rules, then
// configured ones, each group in the order given (the store's: oldest first).
func Precedence(rules []store.Rule) []store.Rule {
	rank := func(r store.Rule) int {
		switch {
		case r.Source == api.ActionRuleSourceConfig:
			return 2
		case r.ConversationID != nil:
			return 0
		}
		return 1
	}
	out := slices.Clone(rules)
	slices.SortStableFunc(out, func(a, b store.Rule) int { return rank(a) - rank(b) })
	return out
}

// Answer is the answer a rule gives.
func Answer(r store.Rule) api.ActionResponse {
	d := api.DecisionApprove
	if r.Decision == api.RuleDecisionReject {
		d = api.DecisionReject
	}
	return api.ActionResponse{Decision: &d, Approved: ptr(d == api.DecisionApprove), Message: r.Message}
}

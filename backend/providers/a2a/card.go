package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// The agent card: which endpoint, and so which A2A version, the provider speaks to. A2A 1.0
// lists an agent's endpoints in supportedInterfaces, each with its protocol binding and protocol
// version; A2A 0.3 named one endpoint (url, preferredTransport) and additionalInterfaces, all
// of the card's protocolVersion. The provider speaks JSON-RPC in either version and prefers 1.0
// when a card offers both (see docs/a2a.md, "Versions").

// cardVersion is sent as A2A-Version when the card is read: an agent that serves both versions
// answers a request that names none with its card in the 0.3 shape, and with 1.0 its own card,
// every interface listed (an agent that speaks only one version ignores the header).
const cardVersion = "1.0"

// decodeCard reads a card of either shape into the SDK's (1.0) card, through the SDK's own 0.3
// card parser, which keeps a 1.0 card's supportedInterfaces and derives them from a 0.3 card's
// endpoints.
func decodeCard(raw []byte) (*a2a.AgentCard, error) {
	card, err := a2av0.NewAgentCardParser()(raw)
	if err != nil {
		return nil, err
	}
	// A 0.3 card may name its url without preferredTransport, JSON-RPC being A2A 0.3's default;
	// the SDK's parser lists no interface for it then.
	var v03 struct {
		URL                 string              `json:"url"`
		PreferredTransport  string              `json:"preferredTransport"`
		ProtocolVersion     a2a.ProtocolVersion `json:"protocolVersion"`
		SupportedInterfaces json.RawMessage     `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(raw, &v03); err != nil {
		return nil, err
	}
	if v03.URL != "" && v03.PreferredTransport == "" && len(v03.SupportedInterfaces) == 0 {
		version := v03.ProtocolVersion
		if version == "" {
			version = a2av0.Version
		}
		card.SupportedInterfaces = append([]*a2a.AgentInterface{
			{URL: v03.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: version},
		}, card.SupportedInterfaces...)
	}
	return card, nil
}

// chooseInterface picks the interface the provider speaks to: JSON-RPC in A2A 1.x, else
// JSON-RPC in A2A 0.3.x. A card offering neither is refused with what it does offer.
func chooseInterface(card *a2a.AgentCard) (*a2a.AgentInterface, error) {
	var v03 *a2a.AgentInterface
	offered := make([]string, 0, len(card.SupportedInterfaces))
	for _, i := range card.SupportedInterfaces {
		if i == nil {
			continue
		}
		offered = append(offered, describeInterface(i))
		if i.ProtocolBinding != a2a.TransportProtocolJSONRPC || i.URL == "" {
			continue
		}
		switch {
		case isProtocol1(i.ProtocolVersion):
			return i, nil
		case isProtocol03(i.ProtocolVersion) && v03 == nil:
			v03 = i
		}
	}
	if v03 != nil {
		return v03, nil
	}
	if len(offered) == 0 {
		return nil, errors.New("the card lists no interface (no supportedInterfaces, no url); this provider speaks A2A 1.0 and 0.3 over JSON-RPC")
	}
	return nil, fmt.Errorf("the card offers %s; this provider speaks A2A 1.0 and 0.3 over JSON-RPC (see docs/a2a.md)", strings.Join(offered, ", "))
}

// isProtocol1 reports A2A 1.x: later 1.x versions keep 1.0's wire (the protocol's versioning).
func isProtocol1(v a2a.ProtocolVersion) bool { return v == "1" || strings.HasPrefix(string(v), "1.") }

// isProtocol03 reports A2A 0.3.x (0.x versions differ from each other).
func isProtocol03(v a2a.ProtocolVersion) bool {
	return v == "0.3" || strings.HasPrefix(string(v), "0.3.")
}

// describeInterface names an interface in an error: its binding and version, as the card says.
func describeInterface(i *a2a.AgentInterface) string {
	binding, version := string(i.ProtocolBinding), "A2A "+string(i.ProtocolVersion)
	if binding == "" {
		binding = "no protocolBinding"
	}
	if i.ProtocolVersion == "" {
		version = "no protocolVersion"
	}
	return binding + " (" + version + ")"
}

package main

import (
	"fmt"
	"html"
	"os"
	"slices"
	"strings"
	"testing"
)

// writeTracePicture draws the spans of a trace as a tracing UI's waterfall, in SVG, when
// HARNESS_TRACE_SVG names a file (docs/images/trace.svg was made so). Rows are in tree order
// (children under their parent, by start time); bars are to scale.
func writeTracePicture(t *testing.T, receiver *otlpReceiver, traceID, callerSpanID string, callerStart, callerEnd uint64) {
	path := os.Getenv("HARNESS_TRACE_SVG")
	if path == "" {
		return
	}
	spans := receiver.find(func(s receivedSpan) bool { return s.traceID == traceID })
	spans = append(spans, receivedSpan{service: "caller", name: "(the SDK caller's own span)", spanID: callerSpanID, start: callerStart, end: callerEnd})
	children := map[string][]receivedSpan{}
	for _, s := range spans {
		children[s.parentID] = append(children[s.parentID], s)
	}
	type row struct {
		span  receivedSpan
		depth int
	}
	var rows []row
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		kids := children[parent]
		slices.SortFunc(kids, func(a, b receivedSpan) int { return int(int64(a.start - b.start)) })
		for _, k := range kids {
			rows = append(rows, row{k, depth})
			walk(k.spanID, depth+1)
		}
	}
	rows = append(rows, row{spans[len(spans)-1], 0})
	walk(callerSpanID, 1)
	t0, t1 := callerStart, callerEnd
	for _, r := range rows {
		t1 = max(t1, r.span.end)
	}
	const labelW, barW, rowH = 430, 560, 22
	colors := map[string]string{"caller": "#8c8c8c", "edge": "#3b7dd8", "upstream": "#d8833b"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="12">`+"\n", labelW+barW+90, (len(rows)+2)*rowH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="8" y="15" font-weight="bold">trace %s — %d spans, %.1f ms</text>`+"\n", traceID, len(rows), float64(t1-t0)/1e6)
	for i, r := range rows {
		y := (i + 1) * rowH
		s := r.span
		x := labelW + int(float64(s.start-t0)/float64(t1-t0)*barW)
		w := max(2, int(float64(s.end-s.start)/float64(t1-t0)*barW))
		color := colors[s.service]
		if color == "" {
			color = "#5aa05a"
		}
		label := fmt.Sprintf("%s  %s", s.service, s.name)
		if n := len(s.events); n > 0 {
			label += fmt.Sprintf(" (%d events)", n)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><rect x="%d" y="%d" width="%d" height="14" fill="%s"/><text x="%d" y="%d" fill="#555">%.1f ms</text>`+"\n",
			8+14*r.depth, y+14, html.EscapeString(label), x, y+3, w, color, min(x+w+4, labelW+barW+4), y+14, float64(s.end-s.start)/1e6)
	}
	b.WriteString("</svg>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

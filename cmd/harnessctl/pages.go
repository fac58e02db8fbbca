package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// page is one page of a listing as the server sent it: the whole answer (printed as is with
// --json), its rows and the cursor of the next page ("" on the last).
type page[T any] struct {
	whole any
	rows  []T
	next  *string
}

// listingPrinter prints a listing page by page, the way `ls` and `conversation ls` share: a
// table with a header, or the server's JSON (one page whole, or one row per line with --all);
// without --all it stops after the first page and says how to get the next.
type listingPrinter[T any] struct {
	noun   string // "executions": the word of "more …" and "no …"
	again  string // the command that fetches the next page, without --after
	header string
	row    func(T) string
}

// print walks the pages from after; fetch returns the page after a cursor, or an error that
// failed answers (its exit code is print's). It returns exitOK once every page asked for is out.
func (p listingPrinter[T]) print(stdout, stderr io.Writer, asJSON, all bool, after string,
	fetch func(after string) (page[T], error), failed func(error) int) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	rows := 0
	for {
		pg, err := fetch(after)
		if err != nil {
			_ = tw.Flush()
			return failed(err)
		}
		switch {
		case asJSON && !all:
			printJSON(stdout, pg.whole)
		case asJSON:
			for _, x := range pg.rows {
				printJSONLine(stdout, x)
			}
		default:
			for _, x := range pg.rows {
				if rows == 0 {
					fmt.Fprintln(tw, p.header)
				}
				fmt.Fprintln(tw, p.row(x))
				rows++
			}
		}
		if pg.next == nil || *pg.next == "" {
			break
		}
		if !all {
			_ = tw.Flush()
			if !asJSON {
				fmt.Fprintf(stderr, "harnessctl: more %s: %s --after %s (or --all)\n", p.noun, p.again, *pg.next)
			}
			return exitOK
		}
		after = *pg.next
	}
	_ = tw.Flush()
	if !asJSON && rows == 0 {
		fmt.Fprintf(stderr, "harnessctl: no %s\n", p.noun)
	}
	return exitOK
}

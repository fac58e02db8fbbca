package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/harness-edge/harness-edge/sdk/api"
)

func newArtifactsCommand(a *app, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "artifacts EXECUTION_ID",
		Short: "list the artifacts an execution has made",
		Long: `One row per artifact: its name, media type, id, URI (when the provider gave one) and
creation time. With --json, prints {"artifacts": [Artifact…]} as the server sends it.`,
		Example: `  harnessctl artifacts exec_3f9a…
  harnessctl artifacts --json exec_3f9a… | jq -r '.artifacts[].name'`,
	}
	cmd.RunE = runs(func(cmd *cobra.Command, args []string) int {
		if len(args) != 1 {
			return a.usageError(cmd, "artifacts: want exactly one EXECUTION_ID")
		}
		c, err := a.client(g)
		if err != nil {
			return a.fail(err)
		}
		artifacts, err := c.ListArtifacts(context.Background(), args[0])
		if err != nil {
			return a.fail(err)
		}
		if g.json {
			printJSON(a.stdout, api.ArtifactList{Artifacts: artifacts})
			return exitOK
		}
		if len(artifacts) == 0 {
			fmt.Fprintln(a.stderr, "harnessctl: no artifacts")
			return exitOK
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tMEDIA TYPE\tID\tURI\tCREATED")
		for _, art := range artifacts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", art.Name, art.MediaType, art.ID, orDash(art.URI), art.CreatedAt)
		}
		_ = tw.Flush()
		return exitOK
	})
	return cmd
}

// printArtifactRows lists artifacts under an execution's fields (get) or after a run.
func printArtifactRows(w io.Writer, artifacts []api.Artifact) {
	if len(artifacts) == 0 {
		return
	}
	label := "artifacts:"
	for _, art := range artifacts {
		fmt.Fprintf(w, "%-14s %s\n", label, describeArtifact(art))
		label = ""
	}
}

// describeArtifact is one artifact on one line: name, media type, and where it is.
func describeArtifact(art api.Artifact) string {
	where := "id " + art.ID
	if art.URI != nil && *art.URI != "" {
		where = *art.URI
	}
	return fmt.Sprintf("%s (%s) %s", art.Name, art.MediaType, where)
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

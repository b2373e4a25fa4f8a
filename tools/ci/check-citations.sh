#!/usr/bin/env bash
# Fails when a file of the repository cites a document the repository does not have, so that a
# reader of a clone can follow every reference. Read from every text file (code comments, scripts,
# configuration and the documents themselves; not tests/data/, fixtures copied from elsewhere):
#   - a document name, NAME.md or a path ending in .md, must be a file, relative to the citing
#     file's folder or to the repository root (a leading / or ./ is dropped; a path built from a
#     variable, $dir/x.md or ${dir}/x.md, is not a citation and is skipped);
#   - a section sign, §N or §N.M, must follow a document name, on the same line or in the three
#     lines before it (in a .md file a bare § means that file itself), and that document must have
#     a heading numbered N or N.M;
#   - "spec §", a section of a specification the repository does not ship, is always refused.
# Only bash, grep and awk: it takes about a second, which is why CI runs it before the build.
#
# usage: check-citations.sh [ROOT]   (ROOT: the source tree, default the repository this script is in)
# exit:  0 clean, 1 with one "file:line: what  [why]" line per dangling citation on stderr,
#        2 when ROOT is not a source tree.
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if [ ! -f "$root/README.md" ] || [ ! -d "$root/tools/ci" ]; then
    echo "check-citations: $root is not a bitnet-serve source tree (no README.md or tools/ci/)" >&2
    exit 2
fi
cd "$root"

# Citations of a document outside the clone on purpose, as FILE:NAME: the file explains why.
#   deploy/ci/check-metric-names.py compares the committed copy of the contract's Metrics section
#   (tests/data/contract/http-api-metrics.md) with the team's full HTTP-API.md when one is given
#   or found beside the clone; without it, the copy alone is used.
allowed=(
    "deploy/ci/check-metric-names.py:HTTP-API.md"
    "deploy/ci/check-metric-names.py:http-api-metrics.md" # its path, joined from its parts
)

# Not read: fixtures (copied from elsewhere, verbatim), and this check and its test, which spell out
# the citations they refuse.
skipped='^(tests/data/|tools/ci/check-citations\.sh$|tests/ci/check_citations_test\.sh$)'

# The files: in a git work tree the tracked ones and the new ones git does not ignore, every file
# below ROOT otherwise (build/, node_modules/ and .git/ left out).
if [ "$(git rev-parse --show-toplevel 2>/dev/null || true)" = "$(pwd -P)" ]; then
    list_files() { git ls-files --cached --others --exclude-standard; }
else
    list_files() {
        find . \( -name .git -o -name build -o -name node_modules \) -prune -o -type f -print |
            sed 's|^\./||'
    }
fi
candidates=()
while IFS= read -r f; do
    candidates+=("$f")
done < <(list_files | grep -vE "$skipped" | sort)
[ "${#candidates[@]}" -gt 0 ] || { echo "check-citations: no files under $root" >&2; exit 2; }

# Only the text files that mention a document or a section are read line by line.
cites=()
while IFS= read -r f; do
    cites+=("$f")
done < <(printf '%s\0' "${candidates[@]}" | xargs -0 grep -lIE '\.md\b|§' 2>/dev/null || true)

# One record per citation: file, line, kind (doc | section | spec | bare), the document, the section.
records() {
    LC_ALL=C awk '
    FNR == 1 { doc = ""; doc_line = -10 }
    {
        line = $0
        # a document named on this line or the three before it (a comment continued)
        # (in a .md file, a bare section sign means the file itself, whatever came before)
        if (FNR - doc_line > 3) doc = ""
        if (FILENAME ~ /\.md$/) doc = "@self"
        # a section of an IETF standard ("RFC 9112 §6.3") is public, not a document of ours
        gsub(/RFC [0-9]+ §[0-9]+(\.[0-9]+)*/, "", line)
        while (match(line, /(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)?[A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.md([^A-Za-z0-9_]|$)|§[0-9]+(\.[0-9]+)*|[Ss]pec §/)) {
            tok = substr(line, RSTART, RLENGTH)
            rest = substr(line, RSTART + RLENGTH)
            if (tok == "spec §" || tok == "Spec §") {
                printf "%s\037%d\037spec\037\037\n", FILENAME, FNR
            } else if (substr(tok, 1, 2) == "§") { # (bytes: awk runs in the C locale)
                # a section of the last document named on this line
                sec = substr(tok, 3)
                if (doc == "") printf "%s\037%d\037bare\037\037%s\n", FILENAME, FNR, sec
                else printf "%s\037%d\037section\037%s\037%s\n", FILENAME, FNR, doc, sec
            } else {
                sub(/[^A-Za-z0-9_]$/, "", tok)
                if (tok ~ /^\$/) {
                    # a path built from a variable: not a citation
                } else if (substr(tok, 1, 2) == "//") {
                    # the path of a URL (the scheme and its colon are not part of the match)
                } else {
                    sub(/^\.?\//, "", tok)
                    doc = tok
                    doc_line = FNR
                    printf "%s\037%d\037doc\037%s\037\n", FILENAME, FNR, tok
                }
                # the character after a document name may start the next token
                rest = substr(line, RSTART + length(tok))
                if (rest == line) rest = substr(line, RSTART + 1)
            }
            line = rest
        }
    }' "$@"
}

# resolve FILE NAME: the path of the cited document, or nothing.
resolve() {
    local dir
    dir="$(dirname "$1")"
    if [ "$2" = "@self" ]; then
        echo "$1"
    elif [ -f "$dir/$2" ]; then
        echo "$dir/$2"
    elif [ -f "$2" ]; then
        echo "$2"
    fi
}

problems=0
report() {
    echo "$1:$2: $3" >&2
    problems=$((problems + 1))
}

if [ "${#cites[@]}" -gt 0 ]; then
    while IFS=$'\037' read -r file line kind doc sec; do
        case "$kind" in
        spec)
            report "$file" "$line" "spec §  [a section of a specification this repository does not ship: cite a document in it, e.g. docs/GGUF-FORMAT.md §N]"
            ;;
        bare)
            report "$file" "$line" "§$sec  [a section sign with no document named on its line or the three before]"
            ;;
        doc)
            if printf '%s\n' "${allowed[@]}" | grep -qxF "$file:$doc"; then
                continue
            fi
            [ -n "$(resolve "$file" "$doc")" ] ||
                report "$file" "$line" "$doc  [no such document in the repository]"
            ;;
        section)
            path="$(resolve "$file" "$doc")"
            [ -n "$path" ] || continue # the document itself is reported above
            if ! grep -qE "^#+[[:space:]]+${sec//./\\.}([[:space:].]|$)" "$path"; then
                report "$file" "$line" "$doc §$sec  [no heading numbered $sec in $path]"
            fi
            ;;
        esac
    done < <(records "${cites[@]}")
fi

if [ "$problems" -gt 0 ]; then
    echo "check-citations: $problems citation(s) of documents or sections the repository does not have" >&2
    exit 1
fi
echo "check-citations: ok (${#cites[@]} files that cite a document or a section)"

#!/usr/bin/env bash
# Keeps the repository's documentation honest: README.md and docs/*.md.
#
#  1. Every relative Markdown link points to a file or folder in the
#     repository, and every #anchor to a heading of the file it names.
#  2. Nothing refers outside the repository: no link or path that climbs
#     above its root, no absolute path of the machine it was written on.
#  3. Every repository path that README.md and docs/design.md name in the
#     text (bench/peers.sh, common/placement.h, tests/integration/, ...)
#     exists. docs/performance.md is a record of past measurements and names
#     files as they were then, so its paths are not checked.
#  4. Every program those two files name by its place in the build tree
#     (build/server/stratad) is built there by that folder's CMakeLists.txt.
#
# Usage: tests/docs_test.sh [REPO_ROOT]   (default: the folder above this script)
# Prints every problem found and exits 1 if there is one, 0 otherwise.
set -u -o pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd -P) || exit 2
cd "$root" || exit 2

docs=(README.md)
for f in docs/*.md; do [[ -e $f ]] && docs+=("$f"); done
# Files whose text paths are checked (see 3 above).
path_checked=(README.md docs/design.md)

failures=0
fail() {
  echo "docs_test: $*" >&2
  failures=$((failures + 1))
}

# The GitHub anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
slug() {
  printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

# The anchors of a Markdown file's headings (outside fenced code blocks).
anchors() {
  awk '/^```/ { fence = !fence; next } !fence && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
    while IFS= read -r heading; do slug "$heading"; echo; done
}

# Whether `path` (relative to the repository root, or absolute) lies inside it.
inside_repo() {
  local resolved
  resolved=$(realpath -m -- "$1") || return 1
  [[ $resolved == "$root" || $resolved == "$root"/* ]]
}

for doc in "${docs[@]}"; do
  dir=$(dirname "$doc")

  # 1 and 2: Markdown links, [text](target) and [text](target "title").
  while IFS= read -r target; do
    target=${target%% *}
    case $target in
      http://* | https://* | mailto:*) continue ;;
    esac
    file=${target%%#*}
    anchor=
    [[ $target == *#* ]] && anchor=${target#*#}
    if [[ -z $file ]]; then
      resolved=$doc
    elif [[ $file == /* ]]; then
      fail "$doc: link to an absolute path: $target"
      continue
    else
      resolved="$dir/$file"
    fi
    if ! inside_repo "$resolved"; then
      fail "$doc: link leaves the repository: $target"
      continue
    fi
    if [[ ! -e $resolved ]]; then
      fail "$doc: broken link: $target (no $resolved)"
      continue
    fi
    if [[ -n $anchor && $resolved == *.md ]]; then
      # (grep reads all of it: with -q, pipefail would see anchors cut off.)
      if ! grep -xF -- "$anchor" <(anchors "$resolved") >/dev/null; then
        fail "$doc: link to a missing heading: $target (no '#$anchor' in $resolved)"
      fi
    fi
  done < <(grep -oE '\]\([^)]+\)' "$doc" | sed -e 's/^](//' -e 's/)$//')

  # 2: no reference to the machine the docs were written on, or above the root.
  while IFS= read -r hit; do
    fail "$doc: refers outside the repository: $hit"
  done < <(grep -nE '(^|[^A-Za-z0-9_.])(/work/|/home/|/root/|\.\./shared)' "$doc")
  while IFS= read -r rel; do
    inside_repo "$dir/$rel" || fail "$doc: path climbs above the repository: $rel"
  done < <(grep -oE '(^|[ `(])(\.\./)+[A-Za-z0-9_./-]*' "$doc" | sed -E 's/^[ `(]//')
done

# 3: repository paths named in the text. A path starts with one of the
# repository's top-level folders, at the start of a word (so build/server/stratad,
# a build output, and <data_dir>/shards/ are not taken for one).
top='bench|client|cmake|common|config|deploy|docs|proto|server|tests|plan'
for doc in "${path_checked[@]}"; do
  [[ -e $doc ]] || continue
  while IFS= read -r path; do
    path=${path%%[.,:;]}
    [[ -e $path ]] || fail "$doc: names $path, which does not exist"
  done < <(grep -oE "(^|[ \`(\"'])(${top})/[A-Za-z0-9_./-]*" "$doc" | sed -E "s/^[ \`(\"']//" | sort -u)
done

# 4: programs named by their place in the build tree (build/server/stratad):
# the folder's CMakeLists.txt must build a program of that name there.
for doc in "${path_checked[@]}"; do
  [[ -e $doc ]] || continue
  while IFS= read -r built; do
    built=${built%%[.,:;]}
    [[ $built == */ ]] && continue  # a folder the build makes (build/client/python/strata/)
    rel=${built#build/}
    folder=$(dirname "$rel")
    name=$(basename "$rel")
    lists="$folder/CMakeLists.txt"
    builds=no
    if [[ -f $lists ]] && grep -qE "add_executable\(${name}[ )]|OUTPUT_NAME +${name}([ )]|$)" "$lists"; then
      builds=yes
    elif [[ -d $folder ]]; then
      # A program built in a sub-folder counts when its output is put here.
      while IFS= read -r sub; do
        grep -q "RUNTIME_OUTPUT_DIRECTORY \${PROJECT_BINARY_DIR}/${folder}\b" "$sub" && builds=yes
      done < <(grep -rlE --include=CMakeLists.txt "add_executable\(${name}[ )]" "$folder")
    fi
    [[ $builds == yes ]] || fail "$doc: names $built, but $lists builds no program $name"
  done < <(grep -oE "(^|[ \`(\"'])build/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]" "$doc" | sed -E "s/^[ \`(\"']//" | sort -u)
done

if ((failures > 0)); then
  echo "docs_test: $failures problem(s) in ${docs[*]}" >&2
  exit 1
fi
echo "docs_test: ${#docs[@]} files checked: links, anchors, named paths and programs are sound"

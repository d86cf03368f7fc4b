#!/usr/bin/env bash
# The libraries compile in unity batches (cmake/StrataBuildSpeed.cmake): the
# sources of one library are included one after another into a single
# compiler run, so their file-local names share one scope. Two file-local
# functions of one name and the same parameters stop the build; two of one
# name and different parameters compile as overloads, and a call in one file
# can then resolve to the other file's function. This test fails on both: a
# file-local function name (in an anonymous namespace or declared static, at
# the left margin as .clang-format writes it) defined in more than one source
# of a library folder. Rename one, or move a shared helper into a header.
# Usage: tests/unity_names_test.sh [REPO_ROOT]   (default: the folder above this script)
set -u -o pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac

root=$(cd "${1:-$(dirname "$0")/..}" && pwd -P) || exit 2
cd "$root" || exit 2

# The folders whose sources are batched: the libraries and the programs
# built beside them (CMakeLists.txt sets CMAKE_UNITY_BUILD around them).
mapfile -t folders < <(find common plan server client -name '*.cc' -printf '%h\n' | sort -u)
if [ ${#folders[@]} -eq 0 ]; then
  echo "unity_names_test: no library sources under $root" >&2
  exit 1
fi

status=0
checked=0
for folder in "${folders[@]}"; do
  sources=("$folder"/*.cc)
  checked=$((checked + ${#sources[@]}))
  # One line per definition: NAME FILE. A definition is a line at the left
  # margin that names a function (NAME followed by "("), inside
  # "namespace {" ... "}  // namespace", or starting with "static".
  clashes=$(awk '
    FNR == 1 { local = 0 }
    /^namespace \{/ { local = 1; next }
    local && /^}  \/\/ namespace/ { local = 0; next }
    (local && /^[A-Za-z_]/) || /^static / {
      line = $0
      sub(/\(.*/, "", line)           # up to the parameter list
      if (line == $0) next            # no "(": not a function
      if (line ~ /[=;{}]/) next       # a variable, a call, a brace
      n = split(line, words, /[ \t*&]+/)
      name = words[n]
      if (name !~ /^[A-Za-z_][A-Za-z0-9_]*$/ || name == "operator") next
      print name, FILENAME
    }' "${sources[@]}" | sort -u | awk '
      { files[$1] = files[$1] " " $2; count[$1]++ }
      END { for (n in count) if (count[n] > 1) print n ":" files[n] }' | sort)
  # Constants: NAME FILE for those at file scope, then for every one.
  decl='(static\s+)?(inline\s+)?(constexpr|const)\s+[\w:<>, ]+?\s\K[A-Za-z_]\w*(?=\s*[={])'
  shadows=$(awk 'NR == FNR { top[$1] = top[$1] " " $2; next }
      ($1 in top) && index(top[$1] " ", " " $2 " ") == 0 { print $1 ": " $2 " and" top[$1] }' \
    <(grep -HPo "^$decl" "${sources[@]}" | awk -F: '{ print $2, $1 }' | sort -u) \
    <(grep -HPo "^\s*$decl" "${sources[@]}" | awk -F: '{ print $2, $1 }' | sort -u) | sort -u)
  if [ -n "$shadows" ]; then
    while IFS= read -r c; do
      echo "unity_names_test: constant ${c%%:*} is declared at file scope in one source of $folder and again in another:${c#*:}" >&2
    done <<<"$shadows"
    status=1
  fi
  if [ -n "$clashes" ]; then
    while IFS= read -r c; do
      echo "unity_names_test: file-local function ${c%%:*} is defined in more than one source of $folder:${c#*:}" >&2
    done <<<"$clashes"
    status=1
  fi
done
if [ "$checked" -eq 0 ]; then
  echo "unity_names_test: found no sources to check" >&2
  exit 1
fi
[ $status -eq 0 ] && echo "unity_names_test: $checked sources in ${#folders[@]} folders, no file-local name declared twice in one folder"
exit $status

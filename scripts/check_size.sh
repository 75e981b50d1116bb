#!/usr/bin/env bash
# The house's size rule (issue 17): no function over 150 lines without a
# reason stated at its top.  A longer function is fine when the comment
# right above it has a line saying why, starting "Long:", e.g.
#     /* Parse one config line.
#      * Long: one case per key, in the order of ns-3's config files. */
# Functions that were already longer when the rule came in are listed in
# scripts/long_functions.txt (FILE FUNCTION LINES); they may shrink, never
# grow, until they are split or given a reason (then drop their line).
# Exit 1 on any breach, listing each as FILE:LINE: reason.
set -uo pipefail
cd "$(dirname "$0")/.."
MAX=150
LIST=scripts/long_functions.txt
files=$(git ls-files 'src/*.c' 2>/dev/null || find src -name '*.c')

# Top-level function definitions as clang-format lays them out: a line at
# column 0 with a '(' that does not end in ';', the body from the line
# ending in '{' to the first '}' at column 0.  Prints FILE LINE NAME
# LENGTH REASON (1 when the comment just above says "Long:").
measure() {
  awk '
    FNR == 1 { st = 0; inc = 0; longc = 0; lastc = -1 }
    st == 0 && (/^\/\*/ || (inc && /^ \*/)) {
      if (!inc) longc = 0
      inc = 1
      if (/Long:/) longc = 1
      if (/\*\/[ \t]*$/) { inc = 0; lastc = FNR }
      next
    }
    st == 0 && /^[A-Za-z_][^=]*\(/ && !/;[ \t]*$/ && !/^(typedef|struct|enum|union|extern)[ \t]/ {
      name = $0; sub(/\(.*/, "", name); n = split(name, w, /[ *]+/); name = w[n]
      start = FNR; reason = (lastc == FNR - 1 && longc); st = 1
    }
    st == 1 && /;[ \t]*$/ { st = 0; next }
    st == 1 && /\{[ \t]*$/ { st = 2; next }
    st == 2 && /^}/ { print FILENAME, start, name, FNR - start + 1, reason; st = 0 }
  ' "$@"
}

declare -A ceiling=()
if [ -f "$LIST" ]; then
  while read -r f fn n; do
    case $f in '' | '#'*) continue ;; esac
    ceiling["$f $fn"]=$n
  done <"$LIST"
fi

fail=0
while read -r f line fn len reason; do
  [ "$len" -le $MAX ] && continue
  [ "$reason" = 1 ] && continue
  c=${ceiling["$f $fn"]-}
  if [ -z "$c" ]; then
    echo "$f:$line: $fn is $len lines (over $MAX): split it, or say why on a \"Long:\" line in the comment above it"
    fail=1
  elif [ "$len" -gt "$c" ]; then
    echo "$f:$line: $fn grew to $len lines ($c when it was listed in $LIST): split it, or say why on a \"Long:\" line"
    fail=1
  fi
done < <(measure $files)
[ $fail -eq 0 ] && echo "check_size: no function over $MAX lines without a reason (${#ceiling[@]} listed in $LIST)"
exit $fail

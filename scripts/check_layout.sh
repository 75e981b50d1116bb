#!/usr/bin/env bash
# The house rules a machine can check (../shared/DESIGN.md, STYLE.md):
#  1. layout: every C file is as .clang-format lays it out;
#  2. rooms: a module includes only the public headers of modules below it,
#     never another module's private *_int.h, and no include climbs ('../');
#  3. doors: every public header opens with the one template, a comment
#     whose first line names it ("/*", then " * etsim/<name>.h — purpose").
# Tests of module M (tests/M/) may read M's private headers; benchmarks
# (bench/) and fuzz targets (tests/fuzz/) are white-box and may read any.  Exit 1 on any breach, listing
# each as FILE:LINE: reason.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0

# 1. layout
CF=${CLANG_FORMAT:-clang-format}
if ! command -v "$CF" >/dev/null; then
  echo "check_layout: $CF is not installed (scripts/deps.sh installs it)" >&2
  exit 2
fi
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'bench/*.[ch]' 2>/dev/null ||
  find src include tests bench -name '*.[ch]')
if ! printf '%s\n' $files | xargs "$CF" --dry-run -Werror 2>/tmp/check_layout.$$; then
  grep 'error:' /tmp/check_layout.$$ | head -20
  echo "check_layout: run clang-format -i on the files above" >&2
  fail=1
fi
rm -f /tmp/check_layout.$$

# 2. rooms.  deps[M] = the modules M may use (its closure), by folder name.
declare -A deps=(
  [base]="" [et]="base" [conv]="et base" [shard]="et base" [gen]="et base shard"
  [edit]="et base" [synth]="et base" [replay]="et base" [des]="base" [topo]="des base"
  [net]="topo des base" [coll]="net topo des base" [sim]="coll net topo des base et"
  [report]="sim coll net topo des base et"
  [sweep]="gen shard sim coll net topo des base et"
)
# The module each public header belongs to.
declare -A owner=(
  [base.h]=base [et.h]=et [etcheck.h]=et [etjson.h]=et [convpt.h]=conv [convtext.h]=conv
  [gen.h]=gen [edit.h]=edit [shard.h]=shard [synth.h]=synth [replay.h]=replay [des.h]=des [topo.h]=topo
  [net.h]=net [netpkt.h]=net [coll.h]=coll [sim.h]=sim [sweep.h]=sweep [report.h]=report
)
allowed() { # allowed FROM_MODULE TARGET_MODULE
  [ "$1" = cli ] || [ "$1" = "$2" ] && return 0
  case " ${deps[$1]-} " in *" $2 "*) return 0 ;; esac
  return 1
}
for f in $files; do
  case $f in
    src/*) mod=${f#src/}; mod=${mod%%/*}; kind=src ;;
    include/etsim/*) h=${f#include/etsim/}; mod=${owner[$h]-}; kind=src ;;
    tests/fuzz/*) mod=""; kind=other ;;
    tests/*/*) mod=${f#tests/}; mod=${mod%%/*}; kind=test ;;
    *) mod=""; kind=other ;;
  esac
  if [ -n "$mod" ] && [ "$kind" != other ] && [ -z "${deps[$mod]+x}" ] && [ "$mod" != cli ] &&
    [ "$kind" = src ]; then
    echo "$f: module '$mod' is not in DESIGN.md's list (add it to scripts/check_layout.sh)"
    fail=1
  fi
  while IFS=: read -r line inc; do
    inc=${inc#*\"}
    inc=${inc%%\"*}
    case $inc in
      ../* | */../*)
        echo "$f:$line: include \"$inc\" climbs out of its folder"
        fail=1
        continue
        ;;
    esac
    case $inc in
      etsim/*.h)
        target=${owner[${inc#etsim/}]-}
        if [ -z "$target" ]; then
          echo "$f:$line: include \"$inc\" is not a public header"
          fail=1
        elif [ "$kind" = src ] && ! allowed "$mod" "$target"; then
          echo "$f:$line: module '$mod' may not use '$target' (DESIGN.md: dependencies point down)"
          fail=1
        fi
        ;;
      *_int.h)
        # own folder's private header, or module/x_int.h of the same module
        target=${inc%%/*}
        [ "$target" = "$inc" ] && target=$mod
        if [ "$kind" = other ]; then :; elif [ "$target" != "$mod" ]; then
          echo "$f:$line: \"$inc\" is module '$target''s private header"
          fail=1
        fi
        ;;
    esac
  done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):/\1:/')
done
# 3. doors
for f in $files; do
  case $f in include/etsim/*.h) ;; *) continue ;; esac
  want=" * etsim/${f#include/etsim/} — "
  line2=$(sed -n 2p "$f")
  if [ "$(sed -n 1p "$f")" != "/*" ] || [ "${line2#"$want"}" = "$line2" ]; then
    echo "$f:1: a public header opens with \"/*\" then \"$want<purpose>\""
    fail=1
  fi
  # C++ programs include the headers too: C linkage for what they declare.
  if ! grep -q '^extern "C" {$' "$f"; then
    echo "$f:1: a public header wraps its declarations in #ifdef __cplusplus extern \"C\" {"
    fail=1
  fi
done

[ $fail -eq 0 ] && echo "check_layout: layout, includes and headers as the house rules say"
exit $fail

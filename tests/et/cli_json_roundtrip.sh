#!/usr/bin/env bash
# cli_json_roundtrip.sh — every .et under $ETSIM_SHARED/traces (and chakra.0.et
# from the feeder-tests tarball) goes through `etsim jsonize` then
# `etsim convert --from json` and must come back byte for byte; a
# pretty-printed (multi-line) copy of the JSON must read back the same; bad
# JSON gives exit 2, a message naming the object and key, and no output file.
. "$(dirname "$0")/../lib.sh"
tmp=$T
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if [ ! -d "$SH/traces" ]; then
  skip_part "$SH/traces is absent (set ETSIM_SHARED): no round trips of shared traces"
else
  tar xzf "$SH/traces/chakra/feeder_tests_trace.tar.gz" -C "$tmp" || bad "tar"
  n=0
  while IFS= read -r f; do
    "$BIN" jsonize -o "$tmp/t.json" "$f" || { bad "jsonize $f"; continue; }
    "$BIN" convert --from json -o "$tmp/t.et" "$tmp/t.json" || { bad "convert $f"; continue; }
    cmp "$f" "$tmp/t.et" || bad "round trip differs: $f"
    n=$((n + 1))
  done < <(find "$SH/traces" "$tmp/tests" -name '*.et' | sort)
  echo "round-tripped $n files"
  [ "$n" -ge 25 ] || bad "expected at least 25 .et files, found $n"

  c0=$tmp/tests/data/chakra.0.et
  # stdout is the default output; one line per object (metadata + 3,664 nodes).
  "$BIN" jsonize "$c0" > "$tmp/c.json" || bad "jsonize to stdout"
  lines=$(wc -l < "$tmp/c.json")
  [ "$lines" -eq 3665 ] || bad "chakra.0.et: $lines JSON lines, expected 3665"
  grep -q '^{"id":"216","name":"aten::flatten_dense_tensors(0)","type":"COMP_NODE","ctrlDeps":\["3"\],"durationMicros":"318"' "$tmp/c.json" \
    || bad "node 216 not in the expected form"
  # Pretty-printed concatenated objects (as chakra_jsonizer writes) read back too.
  # python3 is installed by scripts/deps.sh, so this check always runs.
  command -v python3 >/dev/null || bad "python3 missing (scripts/deps.sh installs it)"
  {
    python3 - "$tmp/c.json" "$tmp/pretty.json" <<'PY'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as o:
    for line in f:
        o.write(json.dumps(json.loads(line), indent=2) + "\n")
PY
    "$BIN" convert --from json -o "$tmp/p.et" "$tmp/pretty.json" || bad "convert pretty"
    cmp "$c0" "$tmp/p.et" || bad "pretty-printed JSON does not round-trip"
  }
  # gzip output from convert reads back through jsonize to the same JSON.
  "$BIN" convert --from json -o "$tmp/c.et.gz" "$tmp/c.json" || bad "convert .gz"
  "$BIN" jsonize "$tmp/c.et.gz" | cmp - "$tmp/c.json" || bad "gzip copy differs"
fi

# Bad input: exit 2, message names object and key, no output left behind.
expect_bad() { # name json expected-substring
  printf '%b' "$2" > "$tmp/bad.json"
  "$BIN" convert --from json -o "$tmp/bad.et" "$tmp/bad.json" 2> "$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] || bad "$1: exit $rc, expected 2"
  grep -qF -- "$3" "$tmp/err" || bad "$1: message '$(cat "$tmp/err")' lacks '$3'"
  [ ! -e "$tmp/bad.et" ] || bad "$1: output file left behind"
  ls "$tmp"/bad.et.* >/dev/null 2>&1 && bad "$1: temporary file left behind"
}
expect_bad malformed '{}\n{"id":"1",\n"name": }\n' 'bad.json:3: object 2: malformed JSON'
expect_bad wrongtype '{}\n{"id":"7","attr":[{"name":"a","int64Val":true}]}\n' "object 2 (node id 7): key 'attr[0].int64Val'"
expect_bad unknowntype '{}\n{"id":"7","type":"FOO_NODE"}\n' "object 2 (node id 7): key 'type': unknown node type 'FOO_NODE'"
expect_bad unknownkey '{}\n{"id":"7","colour":1}\n' "key 'colour': unknown key"
expect_bad badid '{}\n{"id":"-3"}\n' "key 'id'"
expect_bad int32range '{}\n{"id":"1","attr":[{"int32Val":2147483648}]}\n' "attr[0].int32Val"
expect_bad twovalues '{}\n{"id":"1","attr":[{"int32Val":1,"boolVal":true}]}\n' "oneof"
expect_bad nometa '' 'no JSON object'
expect_bad notobject '[1]\n' 'object 1'
expect_bad truncated '{}\n{"id":"1","name":"ab' 'object 2: malformed JSON'

"$BIN" convert --from text -o "$tmp/x.et" in.txt 2> "$tmp/err"
[ $? -eq 2 ] && grep -q -- '--npus' "$tmp/err" || bad "convert --from text needs --npus"
"$BIN" convert --from json "$tmp/x.json" 2> /dev/null
[ $? -eq 2 ] || bad "convert without -o must exit 2"
"$BIN" jsonize --help | grep -q 'usage: etsim jsonize' || bad "jsonize --help"
"$BIN" convert --help | grep -q 'usage: etsim convert' || bad "convert --help"
[ $fail -eq 0 ] || exit 1
finish

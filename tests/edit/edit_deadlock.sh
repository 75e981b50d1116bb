#!/usr/bin/env bash
# End-to-end: `etsim edit` refuses a set whose ranks would wait on each
# other for ever.  A world all-reduce inserted after every collective of a
# DP 2 x TP 2 set keeps each communicator's sequence equal across its ranks
# (the per-communicator check passes) but orders communicators differently
# per rank: rank 0 reaches the inserted world all-reduce after a TP
# all-reduce that rank 2 reaches later.  `etsim validate` finds the deadlock;
# edit must find it too, before anything is renamed into place: exit 2, the
# ranks and nodes named as validate names them, no output and no temporary
# file left, an earlier output untouched.  The same insertion after the
# last node of every rank is fine and must still be written.
. "$(dirname "$0")/../lib.sh"

"$BIN" gen llm --preset llama3-8b --layers 1 --dp 2 --tp 2 -o "$T/s" --quiet || fail "gen llm"
INS='all-reduce:1MiB@type=coll'

# What `etsim validate` says of this edit's output when it is written
# anyway (as it was before the check): the ranks stop at the inserted
# all-reduce (node 22).  Edit must say the same.
expect='deadlock: 4 of 4 rank(s) can never finish: rank 0 node 22 (COMM_COLL_NODE) waits for the other ranks of the world communicator (ALL_REDUCE); rank 1 node 22'

# 1. No output yet: nothing appears.
"$BIN" edit "$T/s" -o "$T/new" --insert-after "$INS" > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "deadlocking edit exits $rc, not 2: $(cat "$T/err")"
grep -qF "etsim: $T/new: nothing written: the edited set would $expect" "$T/err" ||
  fail "message: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "stdout on failure: $(cat "$T/out")"
ls "$T" | grep -q '^new' && fail "output left behind: $(ls "$T" | grep '^new')"
ls -a "$T" | grep -qE '\.part\.|\.tmp\.|\.check\.|etsim-edit' && fail "temporary left: $(ls -a "$T")"

# 2. An earlier output at the same prefix stays as it was, byte for byte
# (per-rank files this time, the other output form).
"$BIN" edit "$T/s" -o "$T/old" --out-format et --scale-time 2 --quiet || fail "first edit"
(cd "$T" && sha256sum old.*) > "$T/before.sha"
[ "$(wc -l < "$T/before.sha")" -eq 5 ] || fail "expected 4 rank files + groups: $(cat "$T/before.sha")"
"$BIN" edit "$T/s" -o "$T/old" --out-format et --insert-after "$INS" 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "over an old output: exit $rc"
grep -qF "the edited set would $expect" "$T/err" || fail "message: $(cat "$T/err")"
(cd "$T" && sha256sum old.*) | cmp -s - "$T/before.sha" || fail "the old output changed"
ls -a "$T" | grep -qE '\.part\.|\.tmp\.|\.check\.|etsim-edit' && fail "temporary left: $(ls -a "$T")"

# 3. Through a retarget stage (written to a temporary set first): the
# final set is checked and the temporary folder goes.
"$BIN" edit "$T/s" -o "$T/dp" --insert-after "$INS" --dp 4 > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 2 ] && grep -qF 'deadlock: 8 of 8 rank(s) can never finish' "$T/err" ||
  fail "retarget: exit $rc: $(cat "$T/err")"
ls -a "$T" | grep -qE '^dp|etsim-edit' && fail "left behind: $(ls -a "$T")"

# 4. A world all-reduce after the last node of every rank cannot deadlock:
# written, and validate agrees.
"$BIN" edit "$T/s" -o "$T/ok" --insert-after 'all-reduce:1MiB@id=17' --quiet 2> "$T/err" ||
  fail "a sound insertion was refused: $(cat "$T/err")"
"$BIN" validate "$T/ok" > "$T/v" || fail "validate: $(cat "$T/v")"
grep -qF '4 rank(s), 76 node(s): 0 problem(s)' "$T/v" || fail "validate: $(cat "$T/v")"

# 5. Through sends and receives: a world all-reduce after every receive of
# a pipeline (PP 2) holds each first-stage rank before the send its peer
# waits for.  Ranks whose files differ only in communicator names and peers
# are checked as one trace with per-rank labels; each rank must still name
# its own peer (as validate does on the written set: rank 0 waits for 4,
# rank 1 for 5, rank 2 for 6).
"$BIN" gen llm --preset llama3-8b --layers 2 --dp 2 --tp 2 --pp 2 --microbatches 2 -o "$T/p" \
  --quiet || fail "gen llm --pp 2"
"$BIN" edit "$T/p" -o "$T/pp" --insert-after 'all-reduce:1MiB@type=recv' 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "pipeline: exit $rc: $(cat "$T/err")"
grep -qF "deadlock: 8 of 8 rank(s) can never finish: rank 0 node 14 (COMM_RECV_NODE) waits for a send from rank 4 (tag 1, 67108864 bytes); rank 1 node 14 (COMM_RECV_NODE) waits for a send from rank 5 (tag 1, 67108864 bytes); rank 2 node 14 (COMM_RECV_NODE) waits for a send from rank 6" "$T/err" ||
  fail "pipeline message: $(cat "$T/err")"
ls -a "$T" | grep -qE '^pp|\.check\.|etsim-edit' && fail "left behind: $(ls -a "$T")"
finish

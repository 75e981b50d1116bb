#!/usr/bin/env bash
# End-to-end: `etsim replay` refuses a set whose ranks would wait on each
# other forever before it launches anything (it waited its 600 s timeout in
# silence), with exit 2 naming the ranks and nodes; the dry run too.  A
# clean pair replays over MPI, and with --progress rank 0 says which
# iteration it is in.
. "$(dirname "$0")/../lib.sh"
cd "$T" || fail "cd"

A='"attr":[{"name":"is_cpu_op","boolVal":false}'
p2p() { # id SEND|RECV src dst [deps]
  echo "{\"id\":\"$1\",\"name\":\"p$1\",\"type\":\"COMM_$2_NODE\",${5:-}$A,{\"name\":\"comm_src\",\"int32Val\":$3},{\"name\":\"comm_dst\",\"int32Val\":$4},{\"name\":\"comm_tag\",\"int32Val\":7},{\"name\":\"comm_size\",\"int64Val\":\"4096\"}]}"
}
mk() { # NAME R NODE...
  local name=$1 r=$2
  shift 2
  { echo '{}'; printf '%s\n' "$@"; } > "$name.$r.json"
  "$BIN" convert --from json "$name.$r.json" -o "$name.$r.et" || fail "convert $name.$r"
}
after1='"dataDeps":["1"],'
# Each rank receives first: neither send is ever issued.
mk dl 0 "$(p2p 1 RECV 1 0)" "$(p2p 2 SEND 0 1 "$after1")"
mk dl 1 "$(p2p 1 RECV 0 1)" "$(p2p 2 SEND 1 0 "$after1")"
for mode in "" "--dry-run"; do
  # shellcheck disable=SC2086
  timeout 20 "$BIN" replay $mode dl > out 2> err; rc=$?
  [ $rc -eq 2 ] || fail "replay $mode of a deadlock: exit $rc ($(cat err))"
  grep -q "^etsim: .*deadlock: 2 of 2 rank(s) can never finish: rank 0 node 1 (COMM_RECV_NODE) waits for a send from rank 1 (tag 7, 4096 bytes)" err ||
    fail "replay $mode message: $(cat err)"
done

# The same pair with one side sending first runs.
mk ok 0 "$(p2p 1 SEND 0 1)" "$(p2p 2 RECV 1 0 "$after1")"
mk ok 1 "$(p2p 1 RECV 0 1)" "$(p2p 2 SEND 1 0 "$after1")"
"$BIN" replay --dry-run ok > out 2> err || fail "dry run of the clean pair: $(cat err)"
if command -v "${ETSIM_MPIRUN:-mpirun}" > /dev/null && [ -x "$(dirname "$BIN")/etsim-replay" ]; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
  # Open MPI's own allocations (ompi_op_base_op_select, its plugins) are
  # never freed: under ASan the leak check is off for the MPI ranks, as in
  # sweep/sweep_mpi.sh and replay/test_mpi.c.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  timeout 120 "$BIN" replay --progress --iterations 2 --warmup 1 ok > out 2> err ||
    fail "replay of the clean pair: $(cat err)"
  grep -q "etsim: replay ok: 2 rank(s); 1 warm-up and 2 timed iteration(s)" err &&
    grep -q "etsim: replay: iteration 2 of 2: " err || fail "progress: $(cat err)"
else
  skip_part "mpirun or etsim-replay is absent: the clean pair is not replayed over MPI"
fi
echo "cli_replay: ok"
finish

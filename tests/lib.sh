# tests/lib.sh — the preamble every end-to-end script shares.  Source it
# first thing (`. "$(dirname "$0")/../lib.sh"`); it sets
#   BIN  the etsim binary ($ETSIM_BIN, required)
#   SRC  the source tree ($ETSIM_SRC, else the folder above tests/)
#   SH   the shared data folder: $ETSIM_SHARED when the user sets it, else
#        the one CMake was configured with ($ETSIM_SHARED_DEFAULT), else
#        $SRC/../shared; exported again as ETSIM_SHARED for child scripts
#   T    a fresh temporary folder, removed when the script exits
# and gives
#   fail MSG        print "FAIL: MSG" and exit 1
#   skip MSG        print "SKIP: MSG" and exit 77, which ctest reports as a
#                   skip (SKIP_RETURN_CODE), never as a pass
#   need_shared P.. skip unless every $SH/P exists
#   skip_part MSG   note that one part of the script could not run and go
#                   on; `finish` (the script's last line) then exits 77
#   finish          exit 0, or 77 after a skip_part
# With ETSIM_NO_SKIP set (CI, which has ../shared) a skip is a failure.
set -u
BIN=${ETSIM_BIN:?ETSIM_BIN must name the etsim binary}
SRC=$(cd "${ETSIM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
SH=${ETSIM_SHARED:-${ETSIM_SHARED_DEFAULT:-$SRC/../shared}}
export ETSIM_SHARED=$SH
T=$(mktemp -d "${TMPDIR:-/tmp}/etsim-test-XXXXXX")
trap 'rm -rf "$T"' EXIT
TEST_SKIPPED=

fail() {
  echo "FAIL: $*"
  exit 1
}

skip() {
  if [ -n "${ETSIM_NO_SKIP:-}" ]; then fail "would skip (ETSIM_NO_SKIP is set): $*"; fi
  echo "SKIP: $*"
  exit 77
}

need_shared() {
  local p
  for p in "$@"; do
    [ -e "$SH/$p" ] || skip "$SH/$p is absent (set ETSIM_SHARED)"
  done
}

skip_part() {
  if [ -n "${ETSIM_NO_SKIP:-}" ]; then fail "would skip (ETSIM_NO_SKIP is set): $*"; fi
  echo "SKIP: $*"
  TEST_SKIPPED=1
}

finish() {
  [ -z "$TEST_SKIPPED" ] || exit 77
  exit 0
}

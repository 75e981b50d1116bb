/*
 * fuzz_configs.c — libFuzzer target for the small JSON inputs of sim and
 * replay: the first byte picks the remote-memory JSON, the communicator
 * groups of sim (8 NPUs) or those of replay (8 ranks); the rest is the
 * file.  Each must load with every rank in range and none twice, or be
 * refused with a message — never a crash or a leak.
 */
#include "fuzz_util.h"

#include "etsim/replay.h"
#include "etsim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  int which = data[0] % 3;
  const char *p = fz_write(0, "cfg.json", data + 1, size - 1);
  if (!p) return 0;
  etsim_error_t err = {0};
  int rc;
  if (which == 0) {
    etsim_mem_config_t m;
    if ((rc = etsim_mem_config_load(p, &m, &err))) fz_refused(rc, &err);
  } else if (which == 1) {
    etsim_comm_groups_t g;
    if ((rc = etsim_comm_groups_load(p, 8, &g, &err))) {
      fz_refused(rc, &err);
      return 0;
    }
    for (size_t i = 0; i < g.n; i++) {
      unsigned seen = 0;
      for (uint32_t k = 0; k < g.g[i].n; k++) {
        if (g.g[i].members[k] >= 8 || (seen >> g.g[i].members[k] & 1)) __builtin_trap();
        seen |= 1u << g.g[i].members[k];
      }
    }
    etsim_comm_groups_free(&g);
  } else {
    etsim_replay_groups_t g;
    if ((rc = etsim_replay_groups_load(&g, p, 8, &err))) {
      fz_refused(rc, &err);
      return 0;
    }
    etsim_replay_groups_free(&g);
  }
  return 0;
}

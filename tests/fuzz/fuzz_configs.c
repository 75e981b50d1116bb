/*
 * fuzz_configs.c — libFuzzer target for the small inputs of sim and
 * replay: the first byte picks the remote-memory JSON, the communicator
 * groups of sim (8 NPUs) or those of replay (8 ranks), or one of sim's
 * what-if specs (--npu-speed, a file or lognormal:...; --link-degrade on a
 * 2-dimension network and by cable; --fail, npu: and link:); the rest is
 * the file or the spec.  Each
 * must load with every rank in range and none twice, every speed and link
 * within the documented factors, or be refused with a message — never a
 * crash or a leak.
 */
#include "fuzz_util.h"

#include "etsim/replay.h"
#include "etsim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The what-if specs: speeds in [1e-3, 1e3], links still positive and
 * finite, a failure on an NPU of the network at a time >= 0. */
static void whatif(int which, const char *p, const uint8_t *data, size_t size) {
  char spec[4096];
  etsim_error_t err = {0};
  int rc;
  /* a spec given inline (it starts with '{', "lognormal:" or "npu:") */
  int inline_spec = which == 5 || (size && (data[0] == '{' || data[0] == 'l'));
  if (inline_spec) {
    if (size >= sizeof spec || memchr(data, 0, size)) return;
    memcpy(spec, data, size);
    spec[size] = 0;
  }
  const char *arg = inline_spec ? spec : p;
  if (which == 3) {
    double sp[64];
    if ((rc = etsim_sim_speed_parse(arg, "--npu-speed", 64, sp, &err))) {
      fz_refused(rc, &err);
      return;
    }
    for (int i = 0; i < 64; i++)
      if (!(sp[i] >= 1e-3 && sp[i] <= 1e3)) __builtin_trap();
  } else if (which == 4) {
    /* the same spec keyed by cables (flow and packet backends) */
    etsim_net_link_whatif_t *lw = NULL;
    size_t n = 0;
    if ((rc = etsim_sim_link_whatif_parse(arg, "--link-degrade", &lw, &n, &err))) {
      fz_refused(rc, &err);
      if (lw) __builtin_trap();
    }
    for (size_t k = 0; k < n; k++)
      if (lw[k].a == lw[k].b || lw[k].down || !(lw[k].bw >= 1e-3 && lw[k].bw <= 1e3) ||
          !(lw[k].lat >= 1e-3 && lw[k].lat <= 1e3))
        __builtin_trap();
    etsim_free(lw);
    static const etsim_topo_kind_t kind[2] = {ETSIM_TOPO_RING, ETSIM_TOPO_SWITCH};
    static const uint32_t npus[2] = {2, 2};
    static const double bw[2] = {50, 25}, lat[2] = {500, 700};
    etsim_topo_t topo;
    if (etsim_topo_init(&topo, 2, kind, npus, bw, lat, "fuzz", &err)) __builtin_trap();
    if ((rc = etsim_sim_link_degrade(arg, "--link-degrade", &topo, &err))) {
      fz_refused(rc, &err);
      return;
    }
    for (int d = 0; d < 2; d++)
      if (!(topo.bw_bytes_per_ns[d] > 0 && isfinite(topo.bw_bytes_per_ns[d]) &&
            topo.lat_ns[d] >= 0 && isfinite(topo.lat_ns[d])))
        __builtin_trap();
  } else {
    etsim_net_link_whatif_t f;
    if ((rc = etsim_sim_fail_link_parse(arg, "--fail", &f, &err))) fz_refused(rc, &err);
    else if (!f.down || f.a == f.b) __builtin_trap();
    uint32_t npu = 0;
    int64_t t_ps = -1;
    if ((rc = etsim_sim_fail_parse(arg, "--fail", 8, &npu, &t_ps, &err))) {
      fz_refused(rc, &err);
      return;
    }
    if (npu >= 8 || t_ps < 0) __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  int which = data[0] % 6;
  const char *p = fz_write(0, "cfg.json", data + 1, size - 1);
  if (!p) return 0;
  if (which >= 3) {
    whatif(which, p, data + 1, size - 1);
    return 0;
  }
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

/*
 * fuzz_system.c — libFuzzer target for ASTRA-sim system JSON: any bytes
 * must load into a configuration within the limits, whose collectives can
 * be set up on a 2 x 2 network or be refused with a message, or be refused
 * with a message — never a crash or a leak.
 */
#include "fuzz_util.h"

#include "etsim/coll.h"
#include "etsim/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  const char *p = fz_write(0, "sys.json", data, size);
  if (!p) return 0;
  etsim_error_t err = {0};
  etsim_sys_config_t c;
  int rc = etsim_sys_config_load(p, &c, &err);
  if (rc) {
    fz_refused(rc, &err);
    return 0;
  }
  if (c.splits < 1 || c.splits > ETSIM_COLL_MAX_SPLITS || c.active_chunks < 1 ||
      c.active_chunks > ETSIM_COLL_MAX_SPLITS || c.endpoint_delay_ns < 0 ||
      c.endpoint_delay_ns > ETSIM_COLL_MAX_DELAY_NS)
    __builtin_trap();
  /* The implementations must fit a network or be refused. */
  static const etsim_topo_kind_t kind[2] = {ETSIM_TOPO_RING, ETSIM_TOPO_SWITCH};
  static const uint32_t npus[2] = {2, 2};
  static const double bw[2] = {50, 25}, lat[2] = {500, 700};
  etsim_topo_t topo;
  if (etsim_topo_init(&topo, 2, kind, npus, bw, lat, "fuzz", &err)) __builtin_trap();
  etsim_des_t q;
  etsim_des_init(&q);
  etsim_net_t *net = NULL;
  if (etsim_net_create(&net, "analytical", &topo, &q, 1, 2, NULL, &err) == 0) {
    etsim_coll_t *coll = NULL;
    etsim_error_t e2 = {0};
    rc = etsim_coll_create(&coll, &c, &topo, net, &q, NULL, NULL, &e2);
    if (rc) fz_refused(rc, &e2);
    else etsim_coll_destroy(coll);
    etsim_net_destroy(net);
  }
  etsim_des_free(&q);
  etsim_sys_config_free(&c);
  return 0;
}

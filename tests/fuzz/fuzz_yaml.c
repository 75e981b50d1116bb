/*
 * fuzz_yaml.c — libFuzzer target for ASTRA-sim network YAML: any bytes
 * must give a topology within the limits (1 to 8 dimensions, 1 to 2^24
 * NPUs, finite positive bandwidths) or be refused with a message — never a
 * crash, a quadratic parse or a leak.
 */
#include "fuzz_util.h"

#include "etsim/topo.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  const char *p = fz_write(0, "net.yml", data, size);
  if (!p) return 0;
  etsim_error_t err = {0};
  etsim_topo_t t;
  int rc = etsim_topo_load_yaml(p, &t, &err);
  if (rc) {
    fz_refused(rc, &err);
    return 0;
  }
  if (t.ndims < 1 || t.ndims > ETSIM_TOPO_MAX_DIMS || t.total < 1 || t.total > ETSIM_TOPO_MAX_NPUS)
    __builtin_trap();
  uint64_t prod = 1;
  for (int d = 0; d < t.ndims; d++) {
    if (!(t.bw_gbps[d] > 0) || !isfinite(t.bw_gbps[d]) || !(t.lat_ns[d] >= 0) ||
        !isfinite(t.lat_ns[d]))
      __builtin_trap();
    prod *= t.npus[d];
  }
  if (prod != t.total) __builtin_trap();
  return 0;
}

/* Topology arithmetic: mixed-radix NPU addresses, hop counts. */
#include "etsim/topo.h"

#include <math.h>
#include <string.h>

static const char *const kind_names[] = {"Ring", "FullyConnected", "Switch"};

const char *etsim_topo_kind_name(etsim_topo_kind_t k) {
  return (unsigned)k < 3 ? kind_names[k] : "?";
}

int etsim_topo_kind_parse(const char *s, etsim_topo_kind_t *out) {
  for (int i = 0; i < 3; i++)
    if (strcmp(s, kind_names[i]) == 0) {
      *out = (etsim_topo_kind_t)i;
      return 0;
    }
  return ETSIM_EINVAL;
}

int etsim_topo_init(etsim_topo_t *t, int ndims, const etsim_topo_kind_t *kind, const uint32_t *npus,
                    const double *bw_gbps, const double *lat_ns, const char *what,
                    etsim_error_t *err) {
  if (ndims < 1 || ndims > ETSIM_TOPO_MAX_DIMS)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %d dimensions (1 to %d supported)", what, ndims,
                           ETSIM_TOPO_MAX_DIMS);
  memset(t, 0, sizeof *t);
  t->ndims = ndims;
  uint64_t total = 1;
  for (int d = 0; d < ndims; d++) {
    if ((unsigned)kind[d] > 2)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: dimension %d: unknown topology", what, d);
    if (npus[d] < 1)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: npus_count[%d] must be >= 1", what, d);
    if (!(bw_gbps[d] > 0) || !isfinite(bw_gbps[d]))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: bandwidth[%d] must be a finite number > 0 GB/s", what, d);
    if (!(lat_ns[d] >= 0) || !isfinite(lat_ns[d]))
      return etsim_error_set(err, ETSIM_EINVAL, "%s: latency[%d] must be a finite number >= 0 ns",
                             what, d);
    t->kind[d] = kind[d];
    t->npus[d] = npus[d];
    t->bw_gbps[d] = bw_gbps[d];
    t->bw_bytes_per_ns[d] = bw_gbps[d] * 1073741824.0 / 1e9;
    t->lat_ns[d] = lat_ns[d];
    t->stride[d] = (uint32_t)total;
    total *= npus[d];
    if (total > ETSIM_TOPO_MAX_NPUS)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: npus_count: more than %llu NPUs in all (the most a rank set "
                             "may have)",
                             what, (unsigned long long)ETSIM_TOPO_MAX_NPUS);
  }
  t->total = (uint32_t)total;
  return 0;
}

int etsim_topo_first_diff_dim(const etsim_topo_t *t, uint32_t a, uint32_t b) {
  for (int d = 0; d < t->ndims; d++)
    if (etsim_topo_coord(t, a, d) != etsim_topo_coord(t, b, d)) return d;
  return -1;
}

uint32_t etsim_topo_hops(const etsim_topo_t *t, int d, uint32_t a, uint32_t b) {
  uint32_t ca = etsim_topo_coord(t, a, d), cb = etsim_topo_coord(t, b, d);
  if (ca == cb) return 0;
  switch (t->kind[d]) {
    case ETSIM_TOPO_FULLY_CONNECTED:
      return 1;
    case ETSIM_TOPO_SWITCH:
      return 2;
    case ETSIM_TOPO_RING: {
      uint32_t delta = ca > cb ? ca - cb : cb - ca;
      uint32_t other = t->npus[d] - delta;
      return delta < other ? delta : other;
    }
  }
  return 0;
}

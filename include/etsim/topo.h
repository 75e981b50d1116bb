/*
 * etsim/topo.h — topology: a multi-dimensional network as ASTRA-sim's analytical
 * backend describes it.
 *
 * A network is the Cartesian product of 1..8 dimensions, each a Ring
 * (bidirectional), a FullyConnected group or a Switch, with its own NPU
 * count, link bandwidth and latency.  NPU ids are mixed-radix addresses with
 * dimension 0 fastest: id = sum_k a_k * prod_{j<k} n_j.
 *
 * Units follow ASTRA-sim: bandwidth is given in GB/s and converted with
 * 2^30 bytes (so 50 GB/s is 53.687 bytes/ns), latency in ns.
 */
#ifndef ETSIM_TOPO_H
#define ETSIM_TOPO_H

#include "etsim/base.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ETSIM_TOPO_MAX_DIMS 8
/* The most NPUs a network may have: as many as a rank set may have ranks
 * (ETSIM_ET_MAX_RANKS).  The simulator keeps state per NPU, and a 60-byte
 * YAML claiming 2^31 NPUs cost 13.6 GB before it was stopped. */
#define ETSIM_TOPO_MAX_NPUS ((uint64_t)1 << 24)

typedef enum {
  ETSIM_TOPO_RING = 0,
  ETSIM_TOPO_FULLY_CONNECTED = 1,
  ETSIM_TOPO_SWITCH = 2
} etsim_topo_kind_t;

typedef struct etsim_topo {
  int ndims;
  etsim_topo_kind_t kind[ETSIM_TOPO_MAX_DIMS];
  uint32_t npus[ETSIM_TOPO_MAX_DIMS];
  double bw_gbps[ETSIM_TOPO_MAX_DIMS];
  double bw_bytes_per_ns[ETSIM_TOPO_MAX_DIMS]; /* bw_gbps * 2^30 / 1e9 */
  double lat_ns[ETSIM_TOPO_MAX_DIMS];
  uint32_t stride[ETSIM_TOPO_MAX_DIMS]; /* prod of npus below the dimension */
  uint32_t total;                       /* NPUs in the network */
} etsim_topo_t;

/* The name ASTRA-sim uses ("Ring", "FullyConnected", "Switch"). */
const char *etsim_topo_kind_name(etsim_topo_kind_t k);
/* Parse a kind name; returns 0 or ETSIM_EINVAL. */
int etsim_topo_kind_parse(const char *s, etsim_topo_kind_t *out);

/* Fill *t from per-dimension arrays and check them (npus > 1... ASTRA-sim
 * accepts 1 as well; bandwidth > 0; latency >= 0; total fits in 2^31).
 * `what` names the source for error messages. */
int etsim_topo_init(etsim_topo_t *t, int ndims, const etsim_topo_kind_t *kind, const uint32_t *npus,
                    const double *bw_gbps, const double *lat_ns, const char *what,
                    etsim_error_t *err);

/* Read an ASTRA-sim network YAML file (keys topology, npus_count,
 * bandwidth, latency: lists of equal length).  Unknown keys are a warning;
 * missing keys, wrong types and unequal lengths are errors naming the file,
 * line and key. */
int etsim_topo_load_yaml(const char *path, etsim_topo_t *t, etsim_error_t *err);

/* Coordinate of NPU `id` in dimension d. */
static inline uint32_t etsim_topo_coord(const etsim_topo_t *t, uint32_t id, int d) {
  return (id / t->stride[d]) % t->npus[d];
}

/* Lowest dimension in which a and b differ, or -1 when a == b. */
int etsim_topo_first_diff_dim(const etsim_topo_t *t, uint32_t a, uint32_t b);

/* Hops a message from a to b takes within dimension d, counting only that
 * dimension's coordinates: 1 for FullyConnected, 2 for Switch (up and down),
 * the shorter way round for a Ring. */
uint32_t etsim_topo_hops(const etsim_topo_t *t, int d, uint32_t a, uint32_t b);

/* The NPU whose coordinates are the negation of id's (mod each dimension):
 * the image of 0 under the translation that takes id to 0. */
static inline uint32_t etsim_topo_mirror(const etsim_topo_t *t, uint32_t id) {
  uint32_t m = 0;
  for (int d = 0; d < t->ndims; d++) {
    uint32_t c = etsim_topo_coord(t, id, d);
    m += (c ? t->npus[d] - c : 0) * t->stride[d];
  }
  return m;
}

/* Neighbour of `id` one step along dimension d's ring: dir +1 clockwise
 * (coordinate + 1, wrapping), -1 anticlockwise. */
static inline uint32_t etsim_topo_step(const etsim_topo_t *t, uint32_t id, int d, int dir) {
  uint32_t c = etsim_topo_coord(t, id, d), n = t->npus[d];
  uint32_t c2 = dir > 0 ? (c + 1 == n ? 0 : c + 1) : (c == 0 ? n - 1 : c - 1);
  return id + (c2 - c) * t->stride[d];
}

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_TOPO_H */

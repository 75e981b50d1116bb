/* Private to src/coll: etsim's own algorithms (ext.c, rooted.c, innet.c). */
#ifndef ETSIM_COLL_EXT_INT_H
#define ETSIM_COLL_EXT_INT_H

#include "coll_int.h"

/* The current phase of a stream. */
#define XCP(s) (&(s)->cur)

/* Per-stream state of a rooted or in-network phase. */
typedef struct xst {
  uint8_t state;
  uint32_t vr;   /* position relative to the root */
  uint32_t mask; /* binomial tree: the child being served */
  uint32_t posted, done;
} xst_t;

/* One dimension a communicator spans (include/etsim/coll.h's grid). */
typedef etsim_coll_grid_dim_t xdim_t;

typedef struct layout {
  int ok; /* the members form a grid */
  int n_dims;
  xdim_t *dims;
} layout_t;

/* A switch gathering the contributions of one phase (key: switch, tag). */
typedef struct swrec {
  uint64_t tag;
  uint32_t sw;
  uint8_t used, type;
  int d;
  uint32_t arrived, need;
  ringmap_t ring; /* the members (ring.pos unused) */
  uint32_t root;
  uint64_t size; /* the phase's data size */
} swrec_t;

typedef struct coll_ext {
  xst_t *st;
  size_t cap_st;
  layout_t *layouts;
  size_t n_layouts, cap_layouts;
  etsim_u64map_t layout_of;        /* communicator address -> layout */
  swrec_t *sw;                     /* open addressing on (switch, tag) */
  size_t sw_cap, sw_used, sw_tomb; /* live records, tombstones */
  int fifo_engines;                /* switches reduce one at a time (congestion backend) */
  etsim_u64map_t sw_slot;          /* switch id -> its reduction engine's slot */
  int64_t *sw_free_ps;
  size_t n_sw_free, cap_sw_free;
} coll_ext_t;

xst_t *etsim_coll__xst(etsim_coll_t *c, uint32_t si);
uint32_t etsim_coll__ring_at(const ringmap_t *r, uint32_t pos);
int etsim_coll__ext_create_check(const etsim_coll_t *c, etsim_error_t *err);

/* rooted.c: chain, direct and binomial-tree broadcast, reduce, gather and
 * scatter on one ring. */
int etsim_coll__rooted_start(etsim_coll_t *c, uint32_t si);
int etsim_coll__rooted_general(etsim_coll_t *c, uint32_t si);
int etsim_coll__rooted_recv(etsim_coll_t *c, uint32_t si);
int etsim_coll__rooted_sent(etsim_coll_t *c, uint32_t si);

/* innet.c: a phase reduced (or multicast) by the dimension's switch. */
int etsim_coll__innet_start(etsim_coll_t *c, uint32_t si);
int etsim_coll__innet_general(etsim_coll_t *c, uint32_t si);
int etsim_coll__innet_recv(etsim_coll_t *c, uint32_t si);
int etsim_coll__innet_sent(etsim_coll_t *c, uint32_t si);

#endif

/*
 * shard_int.h — what the files of the shard module share: the planning
 * context (sizes, bandwidths, capacities derived from the options), the
 * TorchRec shard rating, collective and compute pricing, and the memory
 * tier helpers.
 */
#ifndef ETSIM_SHARD_INT_H
#define ETSIM_SHARD_INT_H

#include "etsim/shard.h"

#include <stdio.h>

typedef struct etsim_shard__ctx {
  const etsim_shard_model_t *m;
  const etsim_shard_opts_t *o;
  size_t P, Pl, hosts;
  double B;
  double hbm, intra, inter, comm; /* bytes per ms (TorchRec's cost model) */
  uint64_t cap;                   /* HBM per rank */
  uint64_t cap_total;             /* HBM + DDR + SSD per rank */
  int tiered;                     /* DDR or SSD present */
  uint32_t obytes;                /* pooled embedding bytes on the wire */
  const uint32_t *by_size;        /* tables by bytes, largest first (or NULL) */
} etsim_shard__ctx_t;

/* Check the options and fill the context; 0 or EINVAL naming the option. */
int etsim_shard__setup(etsim_shard__ctx_t *c, const etsim_shard_model_t *m,
                       const etsim_shard_opts_t *o, etsim_error_t *err);
/* Check step options and tiers alone (plan reading uses them too). */
int etsim_shard__check_step(const etsim_shard_step_t *s, const etsim_shard_tiers_t *k,
                            etsim_error_t *err);

/* TorchRec's column-wise block: the smallest multiple-of-4 divisor of d
 * that is >= the requested size and < d, else d. */
uint32_t etsim_shard__cw_block(uint32_t d, uint32_t want);
/* Rate one shard of table x under type ty with rows x cols: the TorchRec
 * costs and the HBM it needs when all of it is in HBM. */
void etsim_shard__rate(const etsim_shard__ctx_t *c, int ty, const etsim_shard_table_t *x,
                       uint64_t rows, uint32_t cols, etsim_shard_t *s);
static inline double etsim_shard__total(const etsim_shard_t *s) {
  return s->fwd_ms + s->bwd_ms + s->fwd_comm_ms + s->bwd_comm_ms;
}
/* Buffer bytes of a shard (inputs and outputs), the part of hbm_bytes
 * that is not weights. */
uint64_t etsim_shard__io_bytes(const etsim_shard__ctx_t *c, int ty, const etsim_shard_table_t *x,
                               uint32_t cols);
/* Bytes per row with optimizer state. */
double etsim_shard__row_bytes(const etsim_shard__ctx_t *c, const etsim_shard_table_t *x,
                              uint32_t cols);

/* A collective's time (ns) of comm_size `bytes` on the plan's platform:
 * the calibration curve when there is one for (coll, scope), else the
 * closed form of docs/shard.md. */
double etsim_shard__coll_ns(const etsim_shard_opts_t *o, size_t P, size_t Pl, int coll, int scope,
                            double bytes);
/* Roofline time of a kernel (ns). */
double etsim_shard__comp_ns(const etsim_shard_step_t *s, double flops, double bytes);

/* Zipf helpers: generalised harmonic number H(n, a) = sum i^-a. */
double etsim_shard__harmonic(double n, double a);

/*
 * Decide, per rank, which rows of its shards live in HBM, DDR and SSD:
 * the hottest rows first, each level filled by marginal hits per byte
 * (water-filling), within the HBM left after buffers and uncached
 * shards.  Sets hbm_rows, ddr_rows and hbm_bytes of every shard; ERANGE
 * when a rank's shards exceed HBM + DDR + SSD.
 */
int etsim_shard__place_tiers(const etsim_shard__ctx_t *c, etsim_shard_plan_t *p,
                             etsim_error_t *err);
/* Hit fraction of shard s's lookups in its first `rows` hottest rows. */
double etsim_shard__shard_hits(const etsim_shard__ctx_t *c, const etsim_shard_t *s, double rows);

/* Fill p->rank_ms, rank_bytes, max_ms, max_bytes from the shards. */
void etsim_shard__sum_loads(etsim_shard_plan_t *p);

/* JSON string escaping for names written into plans. */
void etsim_shard__json_str(FILE *fp, const char *s);

#endif

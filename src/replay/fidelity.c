/*
 * fidelity.c — how close a replay came to the trace it replays: per-node
 * error statistics, rank correlation, nccl-tests bandwidth conventions and
 * the byte counts each collective moves.
 */
#include "etsim/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int etsim_replay_fidelity(const double *recorded, const double *measured, size_t n,
                          etsim_replay_fidelity_t *out) {
  memset(out, 0, sizeof *out);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) m += recorded[i] > 0;
  if (!m) return 0;
  double *rec = etsim_malloc(m * sizeof *rec);
  double *mea = etsim_malloc(m * sizeof *mea);
  double *ape = etsim_malloc(m * sizeof *ape);
  double *rr = etsim_malloc(m * sizeof *rr);
  double *rm = etsim_malloc(m * sizeof *rm);
  int rc = 0;
  if (!rec || !mea || !ape || !rr || !rm) {
    rc = ETSIM_ENOMEM;
    goto done;
  }
  double sum_abs = 0, sum_rec = 0;
  size_t k = 0, w10 = 0, w25 = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(recorded[i] > 0)) continue;
    rec[k] = recorded[i];
    mea[k] = measured[i];
    double d = fabs(measured[i] - recorded[i]);
    ape[k] = d / recorded[i];
    w10 += d <= 0.10 * recorded[i] * (1 + 1e-12);
    w25 += d <= 0.25 * recorded[i] * (1 + 1e-12);
    sum_abs += d;
    sum_rec += recorded[i];
    k++;
  }
  etsim_qsort(ape, m, sizeof *ape, cmp_double);
  out->n = m;
  out->mdape = m % 2 ? ape[m / 2] : (ape[m / 2 - 1] + ape[m / 2]) / 2.0;
  out->wape = sum_abs / sum_rec;
  out->within10 = (double)w10 / (double)m;
  out->within25 = (double)w25 / (double)m;
  if (m >= 2 && !(rc = etsim_ranks(rec, m, rr)) && !(rc = etsim_ranks(mea, m, rm)))
    out->spearman = etsim_pearson(rr, rm, m);
done:
  etsim_free(rec);
  etsim_free(mea);
  etsim_free(ape);
  etsim_free(rr);
  etsim_free(rm);
  return rc;
}

double etsim_replay_busbw_factor(int coll, int P) {
  if (P < 1) return 0;
  switch (coll) {
    case ETSIM_COLL_ALL_REDUCE:
      return 2.0 * (P - 1) / P;
    case ETSIM_COLL_ALL_GATHER:
    case ETSIM_COLL_REDUCE_SCATTER:
    case ETSIM_COLL_REDUCE_SCATTER_BLOCK:
    case ETSIM_COLL_ALL_TO_ALL:
    case ETSIM_COLL_GATHER:
    case ETSIM_COLL_SCATTER:
      return (double)(P - 1) / P;
    case ETSIM_COLL_BROADCAST:
    case ETSIM_COLL_REDUCE:
      return 1.0;
    case ETSIM_COLL_BARRIER:
      return 0.0;
    default:
      return 1.0; /* send / recv */
  }
}

void etsim_replay_coll_bytes(int coll, uint64_t S, int P, int me, int root, uint64_t *send_bytes,
                             uint64_t *recv_bytes) {
  uint64_t whole = (S + 3) / 4 * 4; /* whole floats */
  uint64_t unit = 4 * (uint64_t)(P > 0 ? P : 1);
  uint64_t split = (S + unit - 1) / unit * unit; /* P equal float blocks */
  uint64_t chunk = split / (P > 0 ? (uint64_t)P : 1);
  uint64_t s = 0, r = 0;
  switch (coll) {
    case ETSIM_COLL_ALL_REDUCE:
      s = r = whole;
      break;
    case ETSIM_COLL_REDUCE:
      s = whole, r = me == root ? whole : 0;
      break;
    case ETSIM_COLL_BROADCAST:
      s = me == root ? whole : 0, r = me == root ? 0 : whole;
      break;
    case ETSIM_COLL_ALL_GATHER:
      /* ASTRA-sim's meaning, as sim and the generators take it: S is each
       * rank's input, the output P times that. */
      s = whole, r = whole * (uint64_t)(P > 0 ? P : 1);
      break;
    case ETSIM_COLL_GATHER:
      s = chunk, r = me == root ? split : 0;
      break;
    case ETSIM_COLL_SCATTER:
      s = me == root ? split : 0, r = chunk;
      break;
    case ETSIM_COLL_REDUCE_SCATTER:
    case ETSIM_COLL_REDUCE_SCATTER_BLOCK:
      s = split, r = chunk;
      break;
    case ETSIM_COLL_ALL_TO_ALL:
      s = r = split;
      break;
    default: /* barrier */
      break;
  }
  *send_bytes = s;
  *recv_bytes = r;
}

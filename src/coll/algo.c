/*
 * algo.c — the collective algorithms, by name: one registry.
 *
 * Each algorithm is one row of the table below, as SQLite's VFS list and
 * src/net/net.c's backends are: the name the system file gives it (with
 * ASTRA-sim's window suffix where it takes one: directN), whether it runs
 * on one ring over all NPUs (the one* names) and what it runs there, what
 * it needs of its ring, the collectives it runs, and the engine's two
 * hooks: the function that fills its part of a phase when a collective is
 * issued, and the one that sets a stream up when the phase starts.  The
 * system-file parser (config.c) finds rows by name; the engine (coll.c,
 * ext.c, rooted.c) reads them by kind.  Adding an algorithm is one row
 * plus its hooks; the names in error messages come from the same rows.
 */
#include "coll_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP(t) (1u << ETSIM_COP_##t)
/* ASTRA-sim's four collectives, the rooted ones, and everything */
#define OPS_ASTRA (OP(ALL_REDUCE) | OP(REDUCE_SCATTER) | OP(ALL_GATHER) | OP(ALL_TO_ALL))
#define OPS_ROOTED (OP(BROADCAST) | OP(REDUCE) | OP(GATHER) | OP(SCATTER))
#define OPS_ALL (OPS_ASTRA | OPS_ROOTED | OP(BARRIER))
/* halving-doubling exchanges halves: no all-to-all (ASTRA-sim refuses it
 * when it runs), and of the rooted kinds only the barrier (its all-gather
 * of a token, ext.c) */
#define OPS_HD (OP(ALL_REDUCE) | OP(REDUCE_SCATTER) | OP(ALL_GATHER) | OP(BARRIER))

/* The engine's hooks for the ring family (ring, direct, halving-doubling)
 * and the double binary tree (coll.c). */
#define RING_HOOKS etsim_coll__ring_phase, etsim_coll__ring_setup
#define DBT_HOOKS etsim_coll__dbt_phase, etsim_coll__dbt_setup
/* etsim's own (ext.c builds and runs their phases; the issue hook serves a
 * phase the engine issues and innet.c's switch takes over, see
 * etsim_coll__phase_algo) */
#define EXT_HOOKS etsim_coll__ring_phase, NULL

/* One row per algorithm, at its kind's index: name, windowed name (how
 * error messages spell NAME followed by a window; NULL: it takes none),
 * kind, base (what a one* name runs on its ring over all NPUs; the kind
 * itself otherwise), flags, the collectives it runs, issue hook, start
 * hook.  inNetwork is no name a file gives: a dimension's switch reduces
 * where "in-network-collectives" says so, for the collectives it can
 * combine. */
#define K(x) ETSIM_ALGO_##x
const etsim_coll__algo_t etsim_coll__algos[ETSIM_ALGO_N] = {
    [K(RING)] = {"ring", NULL, K(RING), K(RING), AF_ASTRA, OPS_ALL, RING_HOOKS},
    [K(DIRECT)] = {"direct", "directN", K(DIRECT), K(DIRECT), AF_ASTRA, OPS_ALL, RING_HOOKS},
    [K(HALVING_DOUBLING)] = {"halvingDoubling", NULL, K(HALVING_DOUBLING), K(HALVING_DOUBLING),
                             AF_ASTRA | AF_POW2, OPS_HD, RING_HOOKS},
    [K(DOUBLE_BINARY_TREE)] = {"doubleBinaryTree", NULL, K(DOUBLE_BINARY_TREE),
                               K(DOUBLE_BINARY_TREE), AF_ASTRA | AF_WHOLE_DIM, OPS_ASTRA,
                               DBT_HOOKS},
    [K(ONE_RING)] = {"oneRing", NULL, K(ONE_RING), K(RING), AF_ASTRA | AF_ONE, OPS_ALL, RING_HOOKS},
    [K(ONE_DIRECT)] = {"oneDirect", "oneDirectN", K(ONE_DIRECT), K(DIRECT), AF_ASTRA | AF_ONE,
                       OPS_ALL, RING_HOOKS},
    [K(ONE_HALVING_DOUBLING)] = {"oneHalvingDoubling", NULL, K(ONE_HALVING_DOUBLING),
                                 K(HALVING_DOUBLING), AF_ASTRA | AF_ONE | AF_POW2, OPS_HD,
                                 RING_HOOKS},
    [K(TREE)] = {"tree", NULL, K(TREE), K(TREE), 0, OPS_ROOTED | OP(BARRIER), EXT_HOOKS},
    [K(IN_NETWORK)] = {"inNetwork", NULL, K(IN_NETWORK), K(IN_NETWORK), AF_IMPLIED,
                       OP(ALL_REDUCE) | OP(REDUCE_SCATTER) | OP(ALL_GATHER) | OP(BROADCAST) |
                           OP(REDUCE),
                       EXT_HOOKS},
};
#undef K

const char *etsim_algo_name(etsim_algo_kind_t k) {
  return (unsigned)k < ETSIM_ALGO_N ? etsim_coll__algos[k].name : "?";
}

const etsim_coll__algo_t *etsim_coll__algo_find(const char *s, int32_t *window) {
  for (int i = 0; i < ETSIM_ALGO_N; i++) {
    const etsim_coll__algo_t *a = &etsim_coll__algos[i];
    if (a->flags & AF_IMPLIED) continue;
    size_t n = strlen(a->name);
    if (strncmp(s, a->name, n) != 0) continue;
    if (s[n] == 0) {
      *window = -1;
      return a;
    }
    /* NAME followed by N: a window of N outstanding sends */
    if (!a->window_name) continue;
    char *end;
    long w = strtol(s + n, &end, 10);
    if (*end == 0 && w > 0 && w < 1 << 30) {
      *window = (int32_t)w;
      return a;
    }
  }
  return NULL;
}

int etsim_coll_impl_parse(const char *s, etsim_coll_impl_t *out) {
  int32_t window;
  const etsim_coll__algo_t *a = etsim_coll__algo_find(s, &window);
  if (!a) return ETSIM_EINVAL;
  *out = (etsim_coll_impl_t){a->kind, window};
  return 0;
}

int etsim_coll__algo_allowed(const etsim_coll__algo_t *a, int t) {
  if (a->ops >> t & 1u) return 1;
  /* ASTRA-sim takes its names in any of its four lists and refuses an
   * impossible pair when it runs: so does etsim (etsim_coll_issue) */
  return (a->flags & AF_ASTRA) && t < ETSIM_COP_ASTRA_N;
}

void etsim_coll__algo_names(int t, char *buf, size_t n) {
  const char *names[2 * ETSIM_ALGO_N];
  int k = 0;
  for (int i = 0; i < ETSIM_ALGO_N; i++) {
    const etsim_coll__algo_t *a = &etsim_coll__algos[i];
    if ((a->flags & AF_IMPLIED) || (t >= 0 && !(a->ops >> t & 1u))) continue;
    names[k++] = a->name;
    if (a->window_name) names[k++] = a->window_name;
  }
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < k && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s",
                            i == 0       ? ""
                            : i == k - 1 ? " or "
                                         : ", ",
                            names[i]);
}

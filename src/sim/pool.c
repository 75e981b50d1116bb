/* The hierarchical memory pool (HIERARCHICAL_MEMORY_POOL, an etsim
 * extension of ASTRA-sim's remote-memory JSON after the ASTRA-sim 2.0
 * paper's disaggregated memory): each node of num-npus-per-node NPUs has
 * an in-node pool behind its switch, and every node reaches one out-node
 * pool behind the out-node switch.
 *
 *   MEM_LOAD / MEM_STORE            the in-node pool: in-node-pool-latency +
 *                                   bytes / in-node-pool-bw, one FIFO server
 *                                   per node (as PER_NODE_MEMORY_EXPANSION)
 *   ... with a comm_type attribute  the out-node pool: in- plus out-node
 *                                   latency + bytes / out-node-pool-bw, one
 *                                   FIFO server for all (as MEMORY_POOL)
 *   MEM_STORE with comm_type REDUCE  a reducing store (ZeRO-Infinity's
 *   or ALL_REDUCE, and              gradients on their way to the pool): each
 *   "in-switch-reduction": true     NPU's k-th reducing store is reduced by its
 *                                   node's switch once the node's NPUs have
 *                                   all sent it (over their own links: in
 *                                   latency + bytes / in bw), the nodes' sums
 *                                   by the out-node switch, and the pool
 *                                   written once.  Every NPU finishes when it
 *                                   is written: lat_in + b/bw_in + b/R +
 *                                   lat_out + b/bw_out + b/R after the last
 *                                   NPU issued, R = in-switch-reduction-bw
 *                                   (b/R = 0 when it is 0).
 * Without in-switch reduction a reducing store is an ordinary out-node
 * store, so the pool takes every NPU's copy in turn.
 */
#include "sim_int.h"

#include <string.h>

typedef struct round {
  uint32_t arrived;
  int64_t *node_max; /* per node: the last arrival at its switch, ps */
  uint32_t *node_n;
  /* waiters: (npu, node index in its trace) to complete */
  uint32_t *npu, *node;
} round_t;

struct etsim_sim_pool {
  const etsim_mem_config_t *m;
  uint32_t n_npus, n_nodes;
  int64_t *node_free; /* in-node pools */
  int64_t pool_free;  /* out-node pool */
  uint32_t *issued;   /* per NPU: reducing stores so far */
  round_t *rounds;
  size_t n_rounds, cap_rounds;
  uint32_t ev_done;
};

int etsim_sim__pool_create(const etsim_mem_config_t *m, uint32_t n_npus, uint32_t ev_done,
                           etsim_sim_pool_t **out) {
  etsim_sim_pool_t *p = etsim_calloc(1, sizeof *p);
  if (!p) return ETSIM_ENOMEM;
  p->m = m;
  p->n_npus = n_npus;
  p->n_nodes = (n_npus + m->npus_per_node - 1) / m->npus_per_node;
  p->ev_done = ev_done;
  p->node_free = etsim_calloc(p->n_nodes, sizeof *p->node_free);
  p->issued = etsim_calloc(n_npus, sizeof *p->issued);
  if (!p->node_free || !p->issued) {
    etsim_sim__pool_free(p);
    return ETSIM_ENOMEM;
  }
  *out = p;
  return 0;
}

void etsim_sim__pool_free(etsim_sim_pool_t *p) {
  if (!p) return;
  for (size_t k = 0; k < p->n_rounds; k++) {
    etsim_free(p->rounds[k].node_max);
    etsim_free(p->rounds[k].node_n);
    etsim_free(p->rounds[k].npu);
    etsim_free(p->rounds[k].node);
  }
  etsim_free(p->rounds);
  etsim_free(p->node_free);
  etsim_free(p->issued);
  etsim_free(p);
}

static int64_t ps_of(double ns) {
  return etsim_des_ns_ok(ns) ? (int64_t)ns * ETSIM_PS_PER_NS : ETSIM_DES_HORIZON_PS + 1;
}

/* A FIFO server: start at max(now, free), busy for ns. */
static int64_t serve(int64_t *free_ps, int64_t now, double lat_ns, double ns_busy) {
  int64_t start = *free_ps > now ? *free_ps : now;
  *free_ps = start + ps_of(ns_busy);
  return start + ps_of(lat_ns + ns_busy);
}

int etsim_sim__pool_issue(etsim_sim_pool_t *p, etsim_des_t *q, uint32_t npu, uint32_t node,
                          uint64_t bytes, int store, int level, int reduce) {
  const etsim_mem_config_t *m = p->m;
  int64_t now = q->now_ps, end;
  double b = (double)bytes;
  if (!(reduce && store && m->in_switch_reduction)) {
    if (!level) /* the in-node pool */
      end = serve(&p->node_free[npu / m->npus_per_node], now, m->in_latency_ns,
                  b / m->in_bw_bytes_per_ns);
    else
      end = serve(&p->pool_free, now, m->in_latency_ns + m->out_latency_ns,
                  b / m->out_bw_bytes_per_ns);
    if (end > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
    return etsim_des_push(q, end, p->ev_done, npu, node);
  }
  /* a reducing store: round k of every NPU meets in the switches */
  uint32_t k = p->issued[npu]++;
  if (k >= p->n_rounds) {
    if (k >= p->cap_rounds &&
        etsim_grow((void **)&p->rounds, &p->cap_rounds, (size_t)k + 1, sizeof *p->rounds))
      return ETSIM_ENOMEM;
    for (size_t j = p->n_rounds; j <= k; j++) {
      round_t *r = &p->rounds[j];
      memset(r, 0, sizeof *r);
      r->node_max = etsim_calloc(p->n_nodes, sizeof *r->node_max);
      r->node_n = etsim_calloc(p->n_nodes, sizeof *r->node_n);
      r->npu = etsim_malloc(p->n_npus * sizeof *r->npu);
      r->node = etsim_malloc(p->n_npus * sizeof *r->node);
      if (!r->node_max || !r->node_n || !r->npu || !r->node) return ETSIM_ENOMEM;
    }
    p->n_rounds = (size_t)k + 1;
  }
  round_t *r = &p->rounds[k];
  uint32_t nd = npu / m->npus_per_node;
  int64_t at = now + ps_of(m->in_latency_ns + b / m->in_bw_bytes_per_ns); /* its own link */
  if (at > r->node_max[nd]) r->node_max[nd] = at;
  r->node_n[nd]++;
  r->npu[r->arrived] = npu;
  r->node[r->arrived] = node;
  if (++r->arrived < p->n_npus) return 0;
  /* everyone is in: each node's switch reduces, sends its sum up; the
   * out-node switch reduces those and the pool is written once */
  double red = m->reduction_bw_bytes_per_ns > 0 ? b / m->reduction_bw_bytes_per_ns : 0;
  int64_t top = 0;
  for (uint32_t n = 0; n < p->n_nodes; n++) {
    if (!r->node_n[n]) continue;
    int64_t up =
        r->node_max[n] + ps_of(red) + ps_of(m->out_latency_ns + b / m->out_bw_bytes_per_ns);
    if (up > top) top = up;
  }
  int64_t done = top + ps_of(red);
  if (p->pool_free > done) done = p->pool_free;
  p->pool_free = done;
  if (done > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
  for (uint32_t j = 0; j < r->arrived; j++) {
    int rc = etsim_des_push(q, done, p->ev_done, r->npu[j], r->node[j]);
    if (rc) return rc;
  }
  return 0;
}

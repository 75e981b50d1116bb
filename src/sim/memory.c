/* Memory capacity: each NPU's live tensor bytes over simulated time, its
 * peak, the NPUs over capacity and the price of offloading what does not
 * fit to host or pool memory.
 *
 * Tensors come from the trace, in ASTRA-sim's convention (its
 * LocalMemUsageTracker): a node's "inputs" and "outputs" attributes are
 * string lists of (tensor name, bytes) pairs.  A tensor is allocated when
 * the node that writes it starts and freed when the last node that reads
 * it ends; a tensor read but never written is live from time 0, one
 * written but never read until the end.  `etsim gen llm --tensors` writes
 * its memory model this way (model states on the first node, each layer's
 * activations written by its forward and read by its backward), so a
 * generated trace and a converted one are tracked alike, in issue order.
 *
 * Offloading (with a capacity and a remote-memory model): the bytes over
 * capacity go out to the remote memory and come back once per iteration,
 * each way costing remote-mem-latency + bytes / remote-mem-bw on the
 * NPU's memory server, served first come first served in NPU order when
 * servers are shared (per node, or one pool).  With `offload` the price is
 * added to the NPU's iteration, else only reported.
 */
#include "sim_int.h"

#include <string.h>

#define WRITTEN 0x80000000u

typedef struct tensor {
  uint64_t size;
  uint32_t n_readers;
  uint8_t written;  /* some node of the trace writes it */
  const char *name; /* in the trace's arena */
} tensor_t;

typedef struct mtrace {
  uint32_t n_tensors;
  tensor_t *ts;
  size_t cap;
  uint32_t *w_off, *w_idx; /* per node: tensors written, CSR */
  uint32_t *r_off, *r_idx; /* per node: tensors read */
  uint64_t initial;        /* read, never written: live from time 0 */
} mtrace_t;

struct etsim_sim_mem {
  size_t n_traces;
  mtrace_t *tr;
  uint32_t n_npus;
  const uint32_t *rank_trace;
  uint32_t **left; /* per NPU: readers left per tensor, WRITTEN bit */
  int64_t *live, *peak;
  int record;
  etsim_sim_mem_sample_t *samples;
  size_t n_samples, cap_samples;
};

/* The (name, bytes) pairs of node i's attribute `key`, or NULL. */
static const char *const *io_list(const etsim_et_trace_t *t, size_t i, uint32_t key, size_t *n) {
  int64_t k = key == UINT32_MAX ? -1 : etsim_et_trace_attr_find(t, i, key);
  if (k < 0) return NULL;
  etsim_attr_t a;
  etsim_et_trace_attr(t, (size_t)k, &a);
  if (a.kind != ETSIM_ATTR_STRING_LIST) return NULL;
  *n = a.v.list.n;
  return (const char *const *)a.v.list.v;
}

static int parse_size(const char *s, uint64_t *out) {
  if (!s || !*s) return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

/* Build one trace's tensor table.  Returns 1 when it has tensors. */
static int build(const etsim_et_trace_t *t, mtrace_t *m, etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  int64_t fi = etsim_intern_find(&t->strings, "inputs"),
          fo = etsim_intern_find(&t->strings, "outputs");
  uint32_t kin = fi < 0 ? UINT32_MAX : (uint32_t)fi, kout = fo < 0 ? UINT32_MAX : (uint32_t)fo;
  if (kin == UINT32_MAX && kout == UINT32_MAX) return 0;
  size_t n = t->n_nodes;
  m->w_off = etsim_calloc(n + 1, sizeof *m->w_off);
  m->r_off = etsim_calloc(n + 1, sizeof *m->r_off);
  if (!m->w_off || !m->r_off) return ETSIM_ENOMEM;
  /* pass 1: count and validate */
  size_t nw = 0, nr = 0;
  for (size_t i = 0; i < n; i++)
    for (int side = 0; side < 2; side++) {
      size_t len = 0;
      const char *const *v = io_list(t, i, side ? kout : kin, &len);
      if (!v) continue;
      if (len % 2)
        return etsim_error_set(err, ETSIM_EFORMAT,
                               "%s: node %llu: \"%s\" lists %zu strings; tensors are (name, "
                               "bytes) pairs",
                               t->path, (unsigned long long)t->id[i], side ? "outputs" : "inputs",
                               len);
      for (size_t k = 0; k < len; k += 2) {
        uint64_t b;
        if (parse_size(v[k + 1], &b))
          return etsim_error_set(err, ETSIM_EFORMAT,
                                 "%s: node %llu: tensor \"%s\" has size \"%s\" (expected bytes)",
                                 t->path, (unsigned long long)t->id[i], v[k], v[k + 1]);
      }
      if (side) nw += len / 2;
      else nr += len / 2;
    }
  m->w_idx = etsim_malloc((nw ? nw : 1) * sizeof *m->w_idx);
  m->r_idx = etsim_malloc((nr ? nr : 1) * sizeof *m->r_idx);
  if (!m->w_idx || !m->r_idx) return ETSIM_ENOMEM;
  /* pass 2: tensor ids by name (the names live in the trace's arena) */
  etsim_u64map_t ids;
  etsim_u64map_init(&ids);
  size_t w = 0, r = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    m->w_off[i] = (uint32_t)w;
    m->r_off[i] = (uint32_t)r;
    for (int side = 1; side >= 0 && !rc; side--) {
      size_t len = 0;
      const char *const *v = io_list(t, i, side ? kout : kin, &len);
      for (size_t k = 0; v && k < len && !rc; k += 2) {
        uint64_t h = etsim_hash_bytes(v[k], strlen(v[k])), b = 0;
        parse_size(v[k + 1], &b);
        uint32_t id;
        /* a hash collision between two names is told apart by a probe */
        for (;;) {
          if (!etsim_u64map_get(&ids, h, &id)) {
            id = m->n_tensors;
            if (m->n_tensors == m->cap &&
                (rc = etsim_grow((void **)&m->ts, &m->cap, m->n_tensors + 1, sizeof *m->ts)))
              break;
            m->ts[id] = (tensor_t){b, 0, 0, v[k]};
            m->n_tensors++;
            if (etsim_u64map_put(&ids, h, id, NULL) < 0) rc = ETSIM_ENOMEM;
            break;
          }
          if (strcmp(m->ts[id].name, v[k]) == 0) break;
          h = etsim_hash_u64(h + 1);
        }
        if (rc) break;
        if (side) {
          if (!m->ts[id].written) m->ts[id].size = b; /* the writer's size counts */
          m->ts[id].written = 1;
          m->w_idx[w++] = id;
        } else {
          m->ts[id].n_readers++;
          m->r_idx[r++] = id;
        }
      }
    }
  }
  m->w_off[n] = (uint32_t)w;
  m->r_off[n] = (uint32_t)r;
  etsim_u64map_free(&ids);
  if (rc) return rc;
  for (uint32_t k = 0; k < m->n_tensors; k++)
    if (!m->ts[k].written && m->ts[k].n_readers) m->initial += m->ts[k].size;
  return 1;
}

static void mtrace_free(mtrace_t *m) {
  etsim_free(m->ts);
  etsim_free(m->w_off);
  etsim_free(m->w_idx);
  etsim_free(m->r_off);
  etsim_free(m->r_idx);
}

void etsim_sim__mem_free(etsim_sim_mem_t *mm) {
  if (!mm) return;
  for (size_t k = 0; k < mm->n_traces; k++) mtrace_free(&mm->tr[k]);
  etsim_free(mm->tr);
  for (uint32_t i = 0; mm->left && i < mm->n_npus; i++) etsim_free(mm->left[i]);
  etsim_free(mm->left);
  etsim_free(mm->live);
  etsim_free(mm->peak);
  etsim_free(mm->samples);
  etsim_free(mm);
}

static int sample(etsim_sim_mem_t *mm, uint32_t npu, int64_t t_ps) {
  if (!mm->record) return 0;
  if (mm->n_samples == mm->cap_samples &&
      etsim_grow((void **)&mm->samples, &mm->cap_samples, mm->n_samples + 1, sizeof *mm->samples))
    return ETSIM_ENOMEM;
  mm->samples[mm->n_samples++] = (etsim_sim_mem_sample_t){npu, t_ps, (uint64_t)mm->live[npu]};
  return 0;
}

int etsim_sim__mem_create(const etsim_et_set_t *set, uint32_t n_npus, const uint32_t *ids,
                          uint32_t n_sim, int record, etsim_sim_mem_t **out, etsim_error_t *err) {
  *out = NULL;
  etsim_sim_mem_t *mm = etsim_calloc(1, sizeof *mm);
  if (!mm) return ETSIM_ENOMEM;
  mm->n_traces = set->n_traces;
  mm->tr = etsim_calloc(set->n_traces, sizeof *mm->tr);
  if (!mm->tr) {
    etsim_sim__mem_free(mm);
    return ETSIM_ENOMEM;
  }
  int any = 0;
  for (size_t k = 0; k < set->n_traces; k++) {
    int rc = build(set->traces[k], &mm->tr[k], err);
    if (rc < 0) {
      etsim_sim__mem_free(mm);
      return rc;
    }
    any |= rc;
  }
  if (!any) {
    etsim_sim__mem_free(mm);
    return 0; /* nothing to track */
  }
  mm->n_npus = n_npus;
  mm->rank_trace = set->rank_trace;
  mm->record = record;
  mm->left = etsim_calloc(n_npus, sizeof *mm->left);
  mm->live = etsim_calloc(n_npus, sizeof *mm->live);
  mm->peak = etsim_calloc(n_npus, sizeof *mm->peak);
  if (!mm->left || !mm->live || !mm->peak) {
    etsim_sim__mem_free(mm);
    return ETSIM_ENOMEM;
  }
  for (uint32_t j = 0; j < n_sim; j++) {
    uint32_t i = ids[j]; /* only the simulated NPUs (class representatives) */
    const mtrace_t *m = &mm->tr[set->rank_trace[i]];
    mm->left[i] = etsim_malloc((m->n_tensors ? m->n_tensors : 1) * sizeof **mm->left);
    if (!mm->left[i]) {
      etsim_sim__mem_free(mm);
      return ETSIM_ENOMEM;
    }
    for (uint32_t k = 0; k < m->n_tensors; k++)
      mm->left[i][k] = m->ts[k].n_readers | (m->ts[k].written ? 0 : WRITTEN);
    mm->live[i] = mm->peak[i] = (int64_t)m->initial;
    if (sample(mm, i, 0)) {
      etsim_sim__mem_free(mm);
      return ETSIM_ENOMEM;
    }
  }
  *out = mm;
  return 0;
}

int etsim_sim__mem_start(etsim_sim_mem_t *mm, uint32_t npu, uint32_t node, int64_t t_ps) {
  const mtrace_t *m = &mm->tr[mm->rank_trace[npu]];
  uint32_t *left = mm->left[npu];
  int changed = 0;
  for (uint32_t e = m->w_off[node]; e < m->w_off[node + 1]; e++) {
    uint32_t k = m->w_idx[e];
    if (left[k] & WRITTEN) continue; /* written once (ASTRA-sim asserts it) */
    left[k] |= WRITTEN;
    mm->live[npu] += (int64_t)m->ts[k].size;
    changed = 1;
  }
  if (!changed) return 0;
  if (mm->live[npu] > mm->peak[npu]) mm->peak[npu] = mm->live[npu];
  return sample(mm, npu, t_ps);
}

int etsim_sim__mem_end(etsim_sim_mem_t *mm, uint32_t npu, uint32_t node, int64_t t_ps) {
  const mtrace_t *m = &mm->tr[mm->rank_trace[npu]];
  uint32_t *left = mm->left[npu];
  int changed = 0;
  for (uint32_t e = m->r_off[node]; e < m->r_off[node + 1]; e++) {
    uint32_t k = m->r_idx[e];
    if ((left[k] & ~WRITTEN) == 0) continue;
    if (--left[k] == WRITTEN) {
      /* the last reader is done: freed */
      mm->live[npu] -= (int64_t)m->ts[k].size;
      changed = 1;
    }
  }
  return changed ? sample(mm, npu, t_ps) : 0;
}

uint64_t etsim_sim__mem_peak(const etsim_sim_mem_t *mm, uint32_t npu) {
  return (uint64_t)mm->peak[npu];
}

void etsim_sim__mem_take_samples(etsim_sim_mem_t *mm, etsim_sim_mem_sample_t **out, size_t *n) {
  *out = mm->samples;
  *n = mm->n_samples;
  mm->samples = NULL;
  mm->n_samples = mm->cap_samples = 0;
}

/* Offloading: what each NPU puts over capacity, its price on the remote
 * memory's servers in NPU order, added to its iteration when asked. */
void etsim_sim__mem_offload(etsim_sim_result_t *r, const etsim_sim_opts_t *o) {
  if (!(o->hbm_bytes > 0)) return;
  const etsim_mem_config_t *m = o->memory;
  /* the hierarchical pool offloads to its in-node pools */
  int hier = m && m->type == ETSIM_MEM_HIER_POOL;
  double lat = hier ? m->in_latency_ns : m ? m->latency_ns : 0;
  double bw = hier ? m->in_bw_bytes_per_ns : m ? m->bw_bytes_per_ns : 0;
  int priced = m && m->type != ETSIM_MEM_NONE && bw > 0;
  int64_t busy = 0; /* the current server's queue, ps */
  uint32_t server = UINT32_MAX;
  for (uint32_t i = 0; i < r->n_npus; i++) {
    etsim_sim_npu_t *p = &r->npu[i];
    p->offload_bytes =
        p->peak_mem_bytes > o->hbm_bytes ? p->peak_mem_bytes - (uint64_t)o->hbm_bytes : 0;
    if (!priced || !p->offload_bytes) continue;
    uint32_t sv = m->type == ETSIM_MEM_POOL      ? 0
                  : m->type == ETSIM_MEM_PER_NPU ? i
                                                 : (m->npus_per_node ? i / m->npus_per_node : 0);
    if (sv != server) {
      server = sv;
      busy = 0;
    }
    /* out and back: two transfers, each latency + bytes / bandwidth */
    double ns = 2 * (lat + (double)p->offload_bytes / bw);
    int64_t ps = ns * ETSIM_PS_PER_NS < (double)ETSIM_DES_HORIZON_PS
                     ? (int64_t)(ns * ETSIM_PS_PER_NS)
                     : ETSIM_DES_HORIZON_PS;
    busy = busy + ps < ETSIM_DES_HORIZON_PS ? busy + ps : ETSIM_DES_HORIZON_PS;
    p->offload_ps = busy; /* its own transfers and those queued before them */
    if (o->offload) {
      p->finish_ps += busy;
      p->exposed_ps += busy;
      p->exposed_true_ps += busy;
      if (p->finish_ps > r->total_ps) r->total_ps = p->finish_ps;
    }
  }
}

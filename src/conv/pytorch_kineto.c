/*
 * pytorch_kineto.c — join a Kineto (profiler) trace to the host trace.
 *
 * Kineto writes Chrome trace events; the complete ('X') ones matter:
 * CPU ops and user annotations (joined to host nodes on the host attribute
 * rf_id = args "Record function id", or on args "External id" when the
 * trace has no record function ids, as older Kineto versions do), CUDA/HIP
 * runtime and driver calls (a launch carries the `correlation` its kernel
 * also carries; *Synchronize calls make the host wait), and GPU activity
 * (kernels, memcpy, memset, with their stream).
 *
 * One sweep per host thread over CPU ops and runtime calls sorted by start
 * (longer first on ties) keeps a stack of open CPU ops, so each event learns
 * its innermost enclosing CPU op; from there the join and the host call tree
 * lead to the converted top-level operator that launched each kernel.
 */
#include "conv/pytorch_conv_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct kctx {
  ptc_t *c;
  const char *path;
  etsim_convpt_summary_t *s;
  uint64_t n_rfid, n_ext; /* CPU events keyed each way */
} kctx_t;

static int64_t arg_int(const ptv_t *args, const char *key, int64_t dflt) {
  const ptv_t *v = etsim_conv__pt_value_get(args, key);
  if (ptv_is_int(v)) return ptv_i(v);
  if (ptv_is_real(v)) return ptc_real_i64(ptv_d(v), dflt);
  return dflt;
}

static int on_event(void *user, const ptv_t *e, uint64_t index, const ptj_loc_t *loc,
                    etsim_error_t *err) {
  kctx_t *k = user;
  ptc_t *c = k->c;
  if (!ptv_is_obj(e))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%" PRIu64 ":%" PRIu64 ": traceEvents[%" PRIu64
                           "]: is not a JSON object",
                           k->path, loc->line, loc->col, index);
  const ptv_t *ph = etsim_conv__pt_value_get(e, "ph");
  if (!ptv_is_str(ph) || strcmp(ptv_str(ph), "X") != 0) return 0;
  const ptv_t *cat = etsim_conv__pt_value_get(e, "cat");
  const char *cs = ptv_is_str(cat) ? ptv_str(cat) : "";
  int cls = 0;
  if (strcmp(cs, "cpu_op") == 0 || strcmp(cs, "user_annotation") == 0) cls = PTK_CPU;
  else if (strcmp(cs, "cuda_runtime") == 0 || strcmp(cs, "cuda_driver") == 0 ||
           strcmp(cs, "hip_runtime") == 0 || strcmp(cs, "hip_driver") == 0)
    cls = PTK_RUNTIME;
  else if (strcmp(cs, "kernel") == 0 || strcmp(cs, "gpu_memcpy") == 0 ||
           strcmp(cs, "gpu_memset") == 0)
    cls = PTK_GPU;
  k->s->kineto_events++;
  if (!cls) return 0;
  const ptv_t *name = etsim_conv__pt_value_get(e, "name");
  const ptv_t *ts = etsim_conv__pt_value_get(e, "ts");
  const ptv_t *dur = etsim_conv__pt_value_get(e, "dur");
  if (!ptv_is_str(name) || !ptv_is_num(ts))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%" PRIu64 ":%" PRIu64 ": traceEvents[%" PRIu64
                           "]: a '%s' event without a string 'name' and a "
                           "numeric 'ts'",
                           k->path, loc->line, loc->col, index, cs);
  if (!ptc_us_ok(ts) || (ptv_is_num(dur) && !ptc_us_ok(dur)))
    return etsim_error_set(err, ETSIM_ERANGE,
                           "%s:%" PRIu64 ":%" PRIu64 ": traceEvents[%" PRIu64
                           "]: 'ts' or 'dur' is outside +-%.0f us",
                           k->path, loc->line, loc->col, index, PTC_MAX_US);
  const ptv_t *args = etsim_conv__pt_value_get(e, "args");
  const ptv_t *tid = etsim_conv__pt_value_get(e, "tid");
  if (etsim_grow((void **)&c->evs, &c->cap_evs, c->n_evs + 1, sizeof *c->evs))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  ptk_ev_t *v = &c->evs[c->n_evs];
  memset(v, 0, sizeof *v);
  v->cls = (uint8_t)cls;
  v->ts_ns = ptc_us_to_ns(ts);
  v->dur_ns = ptv_is_num(dur) ? ptc_us_to_ns(dur) : 0;
  if (v->dur_ns < 0) v->dur_ns = 0;
  v->tid = ptv_is_int(tid) ? ptv_i(tid) : -1;
  v->parent = v->host = v->op = UINT32_MAX;
  const char *nm = ptv_str(name);
  int64_t id = etsim_intern_put(&c->names, nm, strlen(nm));
  if (id < 0) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  v->name = (uint32_t)id;
  if (cls == PTK_CPU) {
    v->key = arg_int(args, "Record function id", -1);
    if (v->key < 0) {
      v->key = arg_int(args, "External id", -1);
      v->by_ext = 1;
    }
    if (strncmp(nm, "ProfilerStep#", 13) == 0) k->s->profiler_steps++;
  } else {
    v->corr = arg_int(args, "correlation", -1);
    if (cls == PTK_GPU) v->stream = arg_int(args, "stream", v->tid);
    else v->sync = strstr(nm, "Synchronize") != NULL;
  }
  c->n_evs++;
  return 0;
}

/* Other members are parsed (so malformed JSON anywhere is reported) and
 * ignored. */
static int on_member(void *user, const char *key, const ptv_t *v, const ptj_loc_t *loc,
                     etsim_error_t *err) {
  (void)user, (void)key, (void)v, (void)loc, (void)err;
  return 0;
}

/* Sweep order: thread, start, longer first, CPU ops before calls.  The
 * keys are copied next to the index so the comparison needs no global. */
typedef struct sweep_key {
  int64_t tid, ts_ns, dur_ns;
  uint32_t cls, idx;
} sweep_key_t;

static int cmp_sweep(const void *a, const void *b) {
  const sweep_key_t *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
  if (x->dur_ns != y->dur_ns) return x->dur_ns > y->dur_ns ? -1 : 1;
  if (x->cls != y->cls) return x->cls < y->cls ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_kern(const void *a, const void *b) {
  const ptc_kernel_t *x = a, *y = b;
  if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
  if (x->launch_ts_ns != y->launch_ts_ns) return x->launch_ts_ns < y->launch_ts_ns ? -1 : 1;
  if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
  return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static int cmp_sync(const void *a, const void *b) {
  const ptc_sync_t *x = a, *y = b;
  if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
  return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

static int has_nccl(const char *s) {
  for (; *s; s++)
    if ((s[0] == 'n' || s[0] == 'N') && (s[1] == 'c' || s[1] == 'C') &&
        (s[2] == 'c' || s[2] == 'C') && (s[3] == 'l' || s[3] == 'L'))
      return 1;
  return 0;
}

static int link(ptc_t *c, etsim_convpt_summary_t *s) {
  size_t n = c->n_evs;
  int rc = ETSIM_ENOMEM;
  etsim_u64map_t rf, corr;
  etsim_u64map_init(&rf);
  etsim_u64map_init(&corr);
  sweep_key_t *keys = NULL;
  uint32_t *order = NULL, *stack = NULL;
  size_t n_order = 0, n_stack = 0;
  /* 1. host rf_id -> node (first of repeats). */
  for (size_t i = 0; i < c->n_nodes; i++)
    if (c->nodes[i].rf_id >= 0 &&
        etsim_u64map_put(&rf, (uint64_t)c->nodes[i].rf_id, (uint32_t)i, NULL) < 0)
      goto out;
  c->op_ts = etsim_malloc((c->n_ops ? c->n_ops : 1) * sizeof *c->op_ts);
  c->op_dur = etsim_malloc((c->n_ops ? c->n_ops : 1) * sizeof *c->op_dur);
  c->op_comm_kernel = etsim_calloc(c->n_ops ? c->n_ops : 1, 1);
  order = etsim_malloc((n ? n : 1) * sizeof *order);
  stack = etsim_malloc((n ? n : 1) * sizeof *stack);
  keys = etsim_malloc((n ? n : 1) * sizeof *keys);
  if (!c->op_ts || !c->op_dur || !c->op_comm_kernel || !order || !stack || !keys) goto out;
  for (size_t k = 0; k < c->n_ops; k++) c->op_ts[k] = c->op_dur[k] = -1;
  /* 2. Join CPU events; time the converted ops. */
  for (size_t i = 0; i < n; i++) {
    ptk_ev_t *v = &c->evs[i];
    if (v->cls == PTK_CPU) {
      uint32_t h;
      if (v->key >= 0 && etsim_u64map_get(&rf, (uint64_t)v->key, &h) &&
          c->nodes[h].name == v->name) {
        v->host = h;
        if (v->by_ext) s->join_by_external_id++;
        uint32_t pos = c->op_pos[h];
        if (pos != UINT32_MAX && c->op_ts[pos] < 0) {
          c->op_ts[pos] = v->ts_ns;
          c->op_dur[pos] = v->dur_ns;
        }
      }
    } else if (v->cls == PTK_RUNTIME && v->corr >= 0) {
      if (etsim_u64map_put(&corr, (uint64_t)v->corr, (uint32_t)i, NULL) < 0) goto out;
    }
    if (v->cls != PTK_GPU) {
      sweep_key_t *sk = &keys[n_order++];
      sk->tid = v->tid;
      sk->ts_ns = v->ts_ns;
      sk->dur_ns = v->dur_ns;
      sk->cls = v->cls;
      sk->idx = (uint32_t)i;
    }
  }
  /* 3. Sweep: enclosing CPU op of every CPU op and runtime call. */
  etsim_qsort(keys, n_order, sizeof *keys, cmp_sweep);
  for (size_t k = 0; k < n_order; k++) order[k] = keys[k].idx;
  int64_t cur_tid = INT64_MIN;
  for (size_t k = 0; k < n_order; k++) {
    ptk_ev_t *v = &c->evs[order[k]];
    if (v->tid != cur_tid) {
      n_stack = 0;
      cur_tid = v->tid;
    }
    while (n_stack > 0) {
      const ptk_ev_t *t = &c->evs[stack[n_stack - 1]];
      if (t->ts_ns + t->dur_ns <= v->ts_ns && !(t->dur_ns == 0 && t->ts_ns == v->ts_ns)) n_stack--;
      else break;
    }
    v->parent = n_stack ? stack[n_stack - 1] : UINT32_MAX;
    uint32_t op = UINT32_MAX;
    if (v->cls == PTK_CPU && v->host != UINT32_MAX) {
      uint32_t top = ptc_top_op(c, v->host);
      if (top != UINT32_MAX) op = c->op_pos[top];
    }
    if (op == UINT32_MAX && v->parent != UINT32_MAX) op = c->evs[v->parent].op;
    v->op = op;
    if (v->cls == PTK_CPU) stack[n_stack++] = order[k];
  }
  /* A synchronising call holds its thread: it belongs to its operator, or
   * when it sits outside any, to the next operator on that thread. */
  uint32_t next_pos = UINT32_MAX;
  cur_tid = INT64_MIN;
  for (size_t k = n_order; k-- > 0;) {
    const ptk_ev_t *v = &c->evs[order[k]];
    if (v->tid != cur_tid) {
      next_pos = UINT32_MAX;
      cur_tid = v->tid;
    }
    if (v->cls == PTK_CPU && v->host != UINT32_MAX && c->op_pos[v->host] != UINT32_MAX) {
      next_pos = c->op_pos[v->host];
      continue;
    }
    if (!v->sync) continue;
    uint32_t pos = v->op != UINT32_MAX ? v->op : next_pos;
    if (pos == UINT32_MAX) continue;
    if (etsim_grow((void **)&c->syncs, &c->cap_syncs, c->n_syncs + 1, sizeof *c->syncs)) goto out;
    c->syncs[c->n_syncs].pos = pos;
    c->syncs[c->n_syncs++].ts_ns = v->ts_ns;
  }
  /* 4. Kernels: correlation -> launch -> op. */
  size_t n_gpu = 0;
  for (size_t i = 0; i < n; i++) n_gpu += c->evs[i].cls == PTK_GPU;
  c->kern = etsim_malloc((n_gpu ? n_gpu : 1) * sizeof *c->kern);
  if (!c->kern) goto out;
  for (size_t i = 0; i < n; i++) {
    const ptk_ev_t *v = &c->evs[i];
    if (v->cls != PTK_GPU) continue;
    uint32_t li;
    if (v->corr < 0 || !etsim_u64map_get(&corr, (uint64_t)v->corr, &li) ||
        c->evs[li].op == UINT32_MAX) {
      s->unlaunched_kernels++;
      continue;
    }
    ptc_kernel_t *kk = &c->kern[c->n_kern++];
    kk->pos = c->evs[li].op;
    kk->ev = (uint32_t)i;
    kk->launch_ts_ns = c->evs[li].ts_ns;
    kk->ts_ns = v->ts_ns;
    kk->comm = 0;
  }
  etsim_qsort(c->syncs, c->n_syncs, sizeof *c->syncs, cmp_sync);
  etsim_conv__pt_kineto_order_kernels(c, s);
  rc = 0;
out:
  etsim_free(order);
  etsim_free(keys);
  etsim_free(stack);
  etsim_u64map_free(&rf);
  etsim_u64map_free(&corr);
  return rc;
}

void etsim_conv__pt_kineto_order_kernels(ptc_t *c, etsim_convpt_summary_t *s) {
  etsim_qsort(c->kern, c->n_kern, sizeof *c->kern, cmp_kern);
  /* Which kernel carries an op's communication: its first NCCL one. */
  for (size_t i = 0; i < c->n_kern; i++) {
    ptc_kernel_t *kk = &c->kern[i];
    const char *kn = etsim_intern_str(&c->names, c->evs[kk->ev].name);
    if (!has_nccl(kn)) continue;
    const ptc_node_t *h = &c->nodes[c->ops[kk->pos]];
    const ptc_ext_t *e = h->ext != UINT32_MAX ? &c->exts[h->ext] : NULL;
    int comm_op = (h->flags & PTC_F_COMM) && e &&
                  (e->kind == PTC_COLL || e->kind == PTC_SEND || e->kind == PTC_RECV);
    if (!comm_op) {
      s->unknown_kernels++;
      continue;
    }
    if (!c->op_comm_kernel[kk->pos]) {
      c->op_comm_kernel[kk->pos] = 1;
      kk->comm = 1;
    }
  }
}

/* GPU nodes of a linked (ET+) host trace, collected while reading it,
 * become kernels of the converted op above their caller. */
int etsim_conv__pt_kineto_host_gpu(ptc_t *c, etsim_convpt_summary_t *s) {
  if (!c->n_evs) return 0;
  c->kern = etsim_malloc(c->n_evs * sizeof *c->kern);
  c->op_comm_kernel = etsim_calloc(c->n_ops ? c->n_ops : 1, 1);
  if (!c->kern || !c->op_comm_kernel) return ETSIM_ENOMEM;
  for (size_t i = 0; i < c->n_evs; i++) {
    const ptk_ev_t *v = &c->evs[i];
    uint32_t top = v->host != UINT32_MAX ? ptc_top_op(c, v->host) : UINT32_MAX;
    if (top == UINT32_MAX) {
      s->unlaunched_kernels++;
      continue;
    }
    ptc_kernel_t *kk = &c->kern[c->n_kern++];
    kk->pos = c->op_pos[top];
    kk->ev = (uint32_t)i;
    kk->launch_ts_ns = v->ts_ns;
    kk->ts_ns = v->ts_ns;
    kk->comm = 0;
  }
  etsim_conv__pt_kineto_order_kernels(c, s);
  return 0;
}

int etsim_conv__pt_kineto_read(ptc_t *c, const char *path, etsim_convpt_summary_t *s,
                               etsim_error_t *err) {
  if (c->n_evs) {
    etsim_warn(
        "%s: the host trace already holds linked GPU nodes; they are "
        "ignored in favour of the Kineto trace",
        c->host_path);
    c->n_evs = 0;
  }
  kctx_t k = {c, path, s, 0, 0};
  int found = 0;
  int rc = etsim_conv__pt_json_stream(path, "traceEvents", on_member, on_event, &k, NULL, NULL,
                                      &found, err);
  if (rc) return rc;
  if (!found)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: no 'traceEvents' list: not a Kineto trace",
                           path);
  if (link(c, s)) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  return 0;
}

void etsim_conv__pt_kineto_free(ptc_t *c) {
  etsim_free(c->evs);
  etsim_free(c->op_ts);
  etsim_free(c->op_dur);
  etsim_free(c->op_comm_kernel);
  etsim_free(c->kern);
  etsim_free(c->syncs);
}

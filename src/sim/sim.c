/* The workload layer and the simulation loop.
 *
 * Per NPU: a dependency counter per node, a ready list kept sorted by node
 * id (ASTRA-sim issues dependency-free nodes in ascending id order), three
 * resource flags, and a state byte per node.  Ranks that share a trace
 * share everything read from it (parent counts included).
 *
 * Completion handling never recurses into issuing: a finishing node puts
 * its children on the ready list and marks its NPU dirty; after each event
 * the loop runs an issue pass on every dirty NPU, at the same simulated
 * time.  Nodes that finish at once (METADATA, INVALID, zero-work compute)
 * therefore release their children in the same instant; ASTRA-sim leaves
 * those children until the NPU's next event (docs/sim.md).
 */
#include "sim_int.h"

#include "etsim/etcheck.h"

#include "etsim/net.h"

#include "sim_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

enum { EV_NODE_DONE = ETSIM_COLL_EV_END, EV_MEM_DONE, EV_FAIL };
enum { ST_WAIT = 0, ST_READY, ST_ISSUED, ST_DONE };
enum { SLOT_P2P = ETSIM_COP_N, SLOT_MEM = ETSIM_COP_N + 1 };
enum { RES_NONE = 0, RES_CPU, RES_COMP, RES_COMM };

typedef struct trace_info {
  const etsim_et_trace_t *t;
  uint32_t *n_par; /* resolved parents per node (data + control) */
  uint8_t *res;    /* RES_* per node */
  uint64_t n_danglers;
  uint32_t k_duration_ns; /* interned name id, UINT32_MAX when absent */
} trace_info_t;

typedef struct npu {
  const trace_info_t *ti;
  uint32_t *deps;
  uint8_t *state;
  int64_t *start_ps;
  uint32_t *ready;
  size_t n_ready, cap_ready;
  uint32_t *incoming;
  size_t n_in, cap_in;
  uint64_t n_done;
  uint8_t cpu_busy, comp_busy, dirty;
  uint32_t comm_busy;
  /* overlap accounting */
  int64_t last_ps;
  uint32_t comp_active, comm_active;
  int comm_slot;
  int64_t comm_union_ps, exposed_ps;
  int64_t exposed_by_op[ETSIM_COP_N + 2];
} npu_t;

typedef struct sim {
  const etsim_et_set_t *set;
  const etsim_topo_t *topo;
  const etsim_sys_config_t *sys;
  const etsim_sim_opts_t *opts;
  etsim_des_t q;
  etsim_net_t *net;
  etsim_coll_t *coll;
  trace_info_t *ti;
  npu_t *npu;
  uint32_t n;           /* NPUs in the network */
  uint32_t n_sim;       /* NPUs simulated: n, or the class representatives */
  uint32_t *sim_ids;    /* their ids, ascending */
  const sim_sym_t *sym; /* classes of equivalent NPUs, or NULL */
  etsim_comm_t *gcomm;  /* reduced run: the groups with their orbits' tag ids */
  etsim_u64map_t gidx;  /* communicator id -> index in opts->groups */
  /* reduced run: simultaneous events at an NPU that could run in another
   * order in the exact run (docs/sim.md): per NPU, the current
   * (time, push time) group's first pusher and handler key */
  struct tie {
    int64_t t, push;
    uint32_t pusher, pusher2;
    uint8_t multi_pusher, multi_key;
    uint64_t key;
  } * tie;
  char tie_why[200];
  uint32_t done_dims;               /* while a collective completes: its dimensions */
  uint64_t nodes_done, nodes_total; /* over simulated NPUs, for progress */
  uint32_t npus_done;
  const etsim_stopwatch_t *sw; /* the run's; its wall time paces progress */
  double next_report_s;
  uint64_t dur_ns_nodes;   /* COMP nodes timed by duration_ns ... */
  int64_t dur_ns_delta_ps; /* ... and how much that moved their times in total */
  uint32_t *dirty;
  size_t n_dirty, cap_dirty;
  etsim_sim_result_t *res;
  etsim_error_t *err;
  int fail;             /* first error from a callback */
  int64_t *mem_free_ps; /* remote-memory servers */
  size_t n_mem;
  int warned_mem, warned_bcast, warned_launcher;
  unsigned deps;                       /* ETSIM_ET_DEPS_*: the edges enforced */
  etsim_et_set_t *cu_set[ETSIM_COP_N]; /* custom collective traces */
  /* communicators defined by METADATA nodes (PyTorch process groups) */
  etsim_comm_t *md;
  int64_t *md_key; /* the pg_name number */
  size_t n_md, cap_md;
  etsim_coll_custom_t cu[ETSIM_COP_N];
  etsim_sim_mem_t *mem;   /* live tensor bytes per NPU (memory.c), NULL: none named */
  etsim_sim_pool_t *pool; /* HIERARCHICAL_MEMORY_POOL (pool.c) */
  int dead;               /* opts->fail_npu has failed */
  const sim_jobs_t *jobs; /* several jobs (etsim_sim_run_jobs), or NULL */
} sim_t;

static const char *const op_names[ETSIM_COP_N + 2] = {
    "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce",
    "gather",     "scatter",        "barrier",    "send-recv",  "memory"};
const char *etsim_sim_op_name(int slot) {
  return slot >= 0 && slot < ETSIM_COP_N + 2 ? op_names[slot] : "?";
}

static int64_t now(const sim_t *s) { return s->q.now_ps; }

/* ----------------------------------------------------------- attributes */

static int attr_int(const sim_t *s, const etsim_et_trace_t *t, size_t i, uint32_t k,
                    const char *name, int64_t dflt, int64_t *out) {
  int64_t v;
  int rc = k == UINT32_MAX ? 0 : etsim_et_trace_attr_int(t, i, k, &v);
  if (rc < 0)
    return etsim_error_set(s->err, ETSIM_EFORMAT,
                           "%s: node %llu: attribute \"%s\" is not an "
                           "integer",
                           t->path, (unsigned long long)t->id[i], name);
  *out = rc == 1 ? v : dflt;
  return rc; /* 1 present, 0 absent */
}

/* attr_int for rank `id`'s own labels (comm_src, comm_dst). */
static int set_attr_int(const sim_t *s, uint32_t id, size_t i, uint32_t k, const char *name,
                        int64_t dflt, int64_t *out) {
  const etsim_et_trace_t *t = s->set->ranks[id];
  int64_t v;
  int rc = k == UINT32_MAX ? 0 : etsim_et_set_attr_int(s->set, id, i, k, &v);
  if (rc < 0)
    return etsim_error_set(s->err, ETSIM_EFORMAT,
                           "%s: node %llu: attribute \"%s\" is not an integer",
                           etsim_et_set_rank_path(s->set, id), (unsigned long long)t->id[i], name);
  *out = rc == 1 ? v : dflt;
  return rc;
}

/* With --job, traces name peers by the job's local ranks: NPU id's label
 * v as an NPU id, or -1 when it names no rank of id's job. */
static int64_t peer_npu(const sim_t *s, uint32_t id, int64_t v) {
  if (!s->jobs) return v;
  const etsim_sim_job_t *jb = &s->jobs->jobs[s->jobs->job_of[id]];
  return v >= 0 && (uint64_t)v < jb->set->n_ranks ? (int64_t)jb->npus[v] : -1;
}

/* ------------------------------------------------------ overlap tracking */

/* A node's recorded duration in ns (duration_micros x 1000), refused with a
 * message naming the node when it is beyond the simulated clock's horizon. */
static int trace_dur_ns(const sim_t *s, const etsim_et_trace_t *t, size_t i, int64_t *out) {
  if (t->dur_us[i] > (uint64_t)(ETSIM_DES_HORIZON_NS / 1000))
    return etsim_error_set(s->err, ETSIM_ERANGE,
                           "%s: node %llu: duration_micros %llu is beyond the simulated clock's "
                           "horizon (2^62 ps, about 53 days)",
                           t->path, (unsigned long long)t->id[i], (unsigned long long)t->dur_us[i]);
  *out = (int64_t)t->dur_us[i] * 1000;
  return 0;
}

/* The error for a delay (ns, from a model's arithmetic) past the horizon. */
static int past_horizon(const sim_t *s, const etsim_et_trace_t *t, size_t i, const char *what,
                        double ns) {
  return etsim_error_set(s->err, ETSIM_ERANGE,
                         "%s: node %llu: %s takes %g ns, beyond the simulated clock's horizon "
                         "(2^62 ps, about 53 days)",
                         t->path, (unsigned long long)t->id[i], what, ns);
}

static void account(npu_t *p, int64_t t) {
  int64_t dt = t - p->last_ps;
  if (dt > 0) {
    if (p->comm_active) {
      p->comm_union_ps += dt;
      if (!p->comp_active) {
        p->exposed_ps += dt;
        if (p->comm_slot >= 0) p->exposed_by_op[p->comm_slot] += dt;
      }
    }
  }
  p->last_ps = t;
}

/* ------------------------------------------------------------ readiness */

static int push_u32(uint32_t **a, size_t *n, size_t *cap, uint32_t v) {
  if (*n == *cap) {
    int rc = etsim_grow((void **)a, cap, *n + 1, sizeof **a);
    if (rc) return rc;
  }
  (*a)[(*n)++] = v;
  return 0;
}

static void mark_dirty(sim_t *s, uint32_t id) {
  npu_t *p = &s->npu[id];
  if (!p->dirty) {
    if (s->n_dirty == s->cap_dirty &&
        etsim_grow((void **)&s->dirty, &s->cap_dirty, s->n_dirty + 1, sizeof *s->dirty)) {
      s->fail = ETSIM_ENOMEM;
      return;
    }
    p->dirty = 1;
    s->dirty[s->n_dirty++] = id;
  }
}

/* Merge incoming nodes into the sorted ready list. */
static int merge_ready(npu_t *p) {
  const uint64_t *ids = p->ti->t->id;
  for (size_t k = 0; k < p->n_in; k++) {
    uint32_t v = p->incoming[k];
    size_t lo = 0, hi = p->n_ready;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      uint32_t m = p->ready[mid];
      if (ids[m] < ids[v] || (ids[m] == ids[v] && m < v)) lo = mid + 1;
      else hi = mid;
    }
    if (p->n_ready == p->cap_ready) {
      int rc = etsim_grow((void **)&p->ready, &p->cap_ready, p->n_ready + 1, sizeof *p->ready);
      if (rc) return rc;
    }
    memmove(p->ready + lo + 1, p->ready + lo, (p->n_ready - lo) * sizeof *p->ready);
    p->ready[lo] = v;
    p->n_ready++;
  }
  p->n_in = 0;
  return 0;
}

/* The resource a node occupies, from its type and is_cpu_op (read once per
 * trace in prepare_traces, not per issue). */
static int resource_of(const etsim_et_trace_t *t, size_t i) {
  int64_t v = 0;
  if (t->k_is_cpu_op != UINT32_MAX && etsim_et_trace_attr_int(t, i, t->k_is_cpu_op, &v) == 1 && v)
    return RES_CPU;
  if (t->type[i] == ETSIM_ET_COMP_NODE) return RES_COMP;
  if (t->type[i] == ETSIM_ET_COMM_RECV_NODE) return RES_NONE;
  return RES_COMM;
}

static int finish_node(sim_t *s, uint32_t id, uint32_t i);

static void occupy(npu_t *p, int res) {
  if (res == RES_CPU) p->cpu_busy = 1;
  else if (res == RES_COMP) p->comp_busy = 1;
  else if (res == RES_COMM) p->comm_busy++;
}

static void release(npu_t *p, int res) {
  if (res == RES_CPU) p->cpu_busy = 0;
  else if (res == RES_COMP) p->comp_busy = 0;
  else if (res == RES_COMM) p->comm_busy--;
}

static int available(const sim_t *s, const npu_t *p, int res) {
  switch (res) {
    case RES_CPU:
      return !p->cpu_busy;
    case RES_COMP:
      return !p->comp_busy;
    case RES_COMM:
      return p->comm_busy == 0 || s->opts->multi_comm;
    default:
      return 1;
  }
}

/* --------------------------------------------------------------- issuing */

/* --comm-scale on a comm_size (at least 1 byte stays 1 byte or more, so a
 * scaled collective is never refused as empty). */
static int64_t comm_scaled(const sim_t *s, int64_t sz) {
  double f = s->opts->comm_scale;
  if (!(f > 0) || f == 1.0 || sz <= 0) return sz;
  double x = (double)sz * f;
  if (x > 9e18) x = 9e18;
  int64_t v = llround(x);
  return v < 1 ? 1 : v;
}

static int issue_coll(sim_t *s, uint32_t id, uint32_t i, int *instant) {
  const etsim_et_trace_t *t = s->npu[id].ti->t;
  int64_t ct = 0, sz = 0, pri = 0;
  int rc;
  /* A host-side (is_cpu_op) collective without comm_size is the launcher
   * of a GPU collective in PyTorch-derived traces (c10d::allreduce_): it
   * moves nothing, and takes no time here, as validate notes. */
  if (t->k_comm_size == UINT32_MAX || etsim_et_trace_attr_int(t, i, t->k_comm_size, &sz) != 1) {
    if (s->npu[id].ti->res[i] == RES_CPU) {
      if (!s->warned_launcher) {
        s->warned_launcher = 1;
        etsim_warn(
            "%s: node %llu: host-side (is_cpu_op) collective without comm_size taken as a "
            "launcher: no time, nothing moved",
            t->path, (unsigned long long)t->id[i]);
      }
      return 0; /* *instant stays 1 */
    }
  }
  if ((rc = attr_int(s, t, i, t->k_comm_type, "comm_type", -1, &ct)) < 0) return rc;
  if (rc == 0)
    return etsim_error_set(s->err, ETSIM_EFORMAT, "%s: node %llu: COMM_COLL_NODE without comm_type",
                           t->path, (unsigned long long)t->id[i]);
  if ((rc = attr_int(s, t, i, t->k_comm_size, "comm_size", 0, &sz)) < 0) return rc;
  if ((rc = attr_int(s, t, i, t->k_comm_priority, "comm_priority", 0, &pri)) < 0) return rc;
  sz = comm_scaled(s, sz);
  int opi = etsim_sim__coll_op(ct, s->sys);
  if (opi < 0 && etsim_sim__rooted_op((int)ct) < 0)
    return etsim_error_set(s->err, ETSIM_EFORMAT, "%s: node %llu: unknown comm_type %lld", t->path,
                           (unsigned long long)t->id[i], (long long)ct);
  if (opi < 0) {
    /* ASTRA-sim replays BROADCAST's duration and rejects the rest; etsim
     * replays the duration of all of them (1 ns when none). */
    if (!s->warned_bcast) {
      s->warned_bcast = 1;
      etsim_warn(
          "%s: node %llu: %s is not simulated through the network: its trace duration "
          "is replayed (as ASTRA-sim does for BROADCAST; \"rooted-collectives\": "
          "\"network\" in the system file runs it)",
          t->path, (unsigned long long)t->id[i], etsim_coll_type_name((int)ct));
    }
    int64_t ns = 0;
    if ((rc = trace_dur_ns(s, t, i, &ns))) return rc;
    if (!ns) ns = 1;
    *instant = 0;
    return etsim_des_push(&s->q, etsim_des_at_ns(&s->q, ns), EV_NODE_DONE, id, i);
  }
  etsim_cop_t op = (etsim_cop_t)opi;
  if (sz < 0 || (sz == 0 && op != ETSIM_COP_BARRIER))
    return etsim_error_set(s->err, ETSIM_EFORMAT,
                           "%s: node %llu: %s of size %lld (comm_size must "
                           "be > 0)",
                           t->path, (unsigned long long)t->id[i], etsim_coll_op_name(op),
                           (long long)sz);
  const etsim_comm_t *comm = NULL;
  const char *pg = etsim_et_set_attr_str(s->set, id, i, t->k_pg_name);
  if (pg && *pg && strcmp(pg, "0") != 0) {
    char *end;
    unsigned long gid = strtoul(pg, &end, 10);
    const etsim_comm_groups_t *g = s->opts->groups;
    uint32_t gk;
    if (g && *end == 0 && etsim_u64map_get(&s->gidx, etsim_sim__group_key(s->jobs, id, gid), &gk))
      comm = s->gcomm ? &s->gcomm[gk] : &g->g[gk];
    for (size_t k = 0; !comm && *end == 0 && k < s->n_md; k++)
      if (s->md_key[k] == (int64_t)etsim_sim__group_key(s->jobs, id, gid)) comm = &s->md[k];
    if (!comm)
      return etsim_error_set(
          s->err, ETSIM_EINVAL,
          "%s: node %llu: communicator group \"%s\" is not "
          "defined (give %s)",
          t->path, (unsigned long long)t->id[i], pg,
          s->jobs ? "the job's groups: --job PREFIX:GROUPS.json" : "--comm-group");
  } else if (s->jobs) {
    comm = &s->jobs->world[s->jobs->job_of[id]]; /* the job's own world */
  }
  uint32_t involved = ~0u;
  if (t->k_involved_dim != UINT32_MAX) {
    int64_t k = etsim_et_trace_attr_find(t, i, t->k_involved_dim);
    if (k >= 0) {
      etsim_attr_t a;
      etsim_et_trace_attr(t, (size_t)k, &a);
      if (a.kind != ETSIM_ATTR_BOOL_LIST)
        return etsim_error_set(s->err, ETSIM_EFORMAT,
                               "%s: node %llu: involved_dim must be a "
                               "bool_list",
                               t->path, (unsigned long long)t->id[i]);
      const int *b = (const int *)a.v.list.v;
      involved = 0;
      for (size_t d = 0; d < a.v.list.n && d < 32; d++)
        if (b[d]) involved |= 1u << d;
      for (size_t d = a.v.list.n; d < 32; d++) involved |= 1u << d;
    }
  }
  npu_t *p = &s->npu[id];
  p->comm_slot = (int)op;
  s->res->bytes_by_op[op] += (uint64_t)sz;
  s->res->count_by_op[op]++;
  s->res->npu[id].comm_bytes += (uint64_t)sz;
  *instant = 0;
  etsim_error_t e2 = {0};
  uint32_t root = 0;
  if (op >= ETSIM_COP_ASTRA_N && (rc = etsim_sim__root(s->err, t, i, comm, s->n, &root))) return rc;
  rc = etsim_coll_issue_rooted(s->coll, id, op, (uint64_t)sz, involved, comm, root, (int32_t)pri, i,
                               &e2);
  if (rc)
    return etsim_error_set(s->err, rc, "%s: node %llu (NPU %u): %s", t->path,
                           (unsigned long long)t->id[i], id, e2.msg);
  return 0;
}

static int issue_p2p(sim_t *s, uint32_t id, uint32_t i, int *instant) {
  const etsim_et_trace_t *t = s->npu[id].ti->t;
  int send = t->type[i] == ETSIM_ET_COMM_SEND_NODE;
  int64_t src = 0, dst = 0, sz = 0, tag = 0;
  int rc;
  /* peers are labels: this rank's values (et/share.c) */
  int64_t me = s->jobs ? s->jobs->rank_of[id] : id;
  if ((rc = set_attr_int(s, id, i, t->k_comm_src, "comm_src", me, &src)) < 0) return rc;
  if ((rc = set_attr_int(s, id, i, t->k_comm_dst, "comm_dst", me, &dst)) < 0) return rc;
  if ((rc = attr_int(s, t, i, t->k_comm_size, "comm_size", 0, &sz)) < 0) return rc;
  if ((rc = attr_int(s, t, i, t->k_comm_tag, "comm_tag", 0, &tag)) < 0) return rc;
  sz = comm_scaled(s, sz);
  int64_t peer = send ? dst : src, self = send ? src : dst;
  if (s->jobs) {
    /* the job's local ranks as NPU ids */
    const etsim_sim_job_t *jb = &s->jobs->jobs[s->jobs->job_of[id]];
    int64_t pn = peer_npu(s, id, peer);
    if (self != me)
      return etsim_error_set(
          s->err, ETSIM_EFORMAT, "%s: node %llu: a %s on rank %lld of job %s names comm_%s %lld",
          t->path, (unsigned long long)t->id[i], send ? "send" : "receive", (long long)me,
          jb->name ? jb->name : "?", send ? "src" : "dst", (long long)self);
    if (pn < 0 || pn == id)
      return etsim_error_set(s->err, ETSIM_EFORMAT,
                             "%s: node %llu: comm_%s %lld is not another rank of job %s (0 to %zu)",
                             t->path, (unsigned long long)t->id[i], send ? "dst" : "src",
                             (long long)peer, jb->name ? jb->name : "?", jb->set->n_ranks - 1);
    self = id;
    peer = pn;
  }
  if (self != id)
    return etsim_error_set(s->err, ETSIM_EFORMAT,
                           "%s: node %llu: a %s on NPU %u names comm_%s %lld", t->path,
                           (unsigned long long)t->id[i], send ? "send" : "receive", id,
                           send ? "src" : "dst", (long long)self);
  if (peer < 0 || peer >= s->n || peer == id)
    return etsim_error_set(s->err, ETSIM_EFORMAT,
                           "%s: node %llu: comm_%s %lld is not another NPU "
                           "of the %u-NPU network",
                           t->path, (unsigned long long)t->id[i], send ? "dst" : "src",
                           (long long)peer, s->n);
  if (sz < 0)
    return etsim_error_set(s->err, ETSIM_EFORMAT, "%s: node %llu: negative comm_size", t->path,
                           (unsigned long long)t->id[i]);
  *instant = 0;
  if (send) {
    s->npu[id].comm_slot = SLOT_P2P;
    s->res->bytes_by_op[SLOT_P2P] += (uint64_t)sz;
    s->res->count_by_op[SLOT_P2P]++;
    s->res->npu[id].comm_bytes += (uint64_t)sz;
    rc = etsim_coll_send(s->coll, id, (uint32_t)peer, (uint64_t)sz, (uint32_t)tag, i, s->err);
  } else {
    rc = etsim_coll_recv(s->coll, id, (uint32_t)peer, (uint64_t)sz, (uint32_t)tag, i, s->err);
  }
  if (rc < 0 && s->err) {
    /* the system layer's words, with the trace file and node they are about */
    char m[sizeof s->err->msg];
    snprintf(m, sizeof m, "%s", s->err->msg);
    etsim_error_set(s->err, rc, "%s: node %llu: %s", t->path, (unsigned long long)t->id[i], m);
  }
  return rc;
}

static int issue_mem(sim_t *s, uint32_t id, uint32_t i, int *instant) {
  const etsim_et_trace_t *t = s->npu[id].ti->t;
  const etsim_mem_config_t *m = s->opts->memory;
  int64_t sz = 0;
  int rc;
  if ((rc = attr_int(s, t, i, t->k_tensor_size, "tensor_size", 0, &sz)) < 0) return rc;
  if (!m || m->type == ETSIM_MEM_NONE) {
    if (!s->warned_mem) {
      s->warned_mem = 1;
      etsim_warn(
          "%s: node %llu: memory node with no remote memory configured (give --memory): "
          "it takes no time",
          t->path, (unsigned long long)t->id[i]);
    }
    *instant = 1;
    return 0;
  }
  if (m->type == ETSIM_MEM_HIER_POOL) {
    /* pool.c: a comm_type sends it to the out-node pool (reduced in the
     * switches when it is a reduce) */
    int64_t ct = -1;
    int level =
        t->k_comm_type != UINT32_MAX && etsim_et_trace_attr_int(t, i, t->k_comm_type, &ct) == 1;
    int reduce = level && (ct == ETSIM_COLL_REDUCE || ct == ETSIM_COLL_ALL_REDUCE);
    s->npu[id].comm_slot = SLOT_MEM;
    s->res->bytes_by_op[SLOT_MEM] += (uint64_t)sz;
    s->res->count_by_op[SLOT_MEM]++;
    *instant = 0;
    rc = etsim_sim__pool_issue(s->pool, &s->q, id, i, (uint64_t)sz,
                               t->type[i] == ETSIM_ET_MEM_STORE_NODE, level, reduce);
    return rc == ETSIM_ERANGE ? past_horizon(s, t, i, "the memory-pool access", 0) : rc;
  }
  size_t server = m->type == ETSIM_MEM_POOL      ? 0
                  : m->type == ETSIM_MEM_PER_NPU ? id
                                                 : (m->npus_per_node ? id / m->npus_per_node : 0);
  if (server >= s->n_mem) server = s->n_mem - 1;
  int64_t start = s->mem_free_ps[server] > now(s) ? s->mem_free_ps[server] : now(s);
  double ns = m->latency_ns + (m->bw_bytes_per_ns > 0 ? (double)sz / m->bw_bytes_per_ns : 0);
  if (!etsim_des_ns_ok(ns) || start > ETSIM_DES_HORIZON_PS)
    return past_horizon(s, t, i, "the remote-memory access", ns);
  int64_t end = start + (int64_t)ns * ETSIM_PS_PER_NS;
  s->mem_free_ps[server] = end;
  s->npu[id].comm_slot = SLOT_MEM;
  s->res->bytes_by_op[SLOT_MEM] += (uint64_t)sz;
  s->res->count_by_op[SLOT_MEM]++;
  *instant = 0;
  return etsim_des_push(&s->q, end, EV_NODE_DONE, id, i);
}

static int issue_comp(sim_t *s, uint32_t id, uint32_t i, int cpu, int *instant) {
  const etsim_et_trace_t *t = s->npu[id].ti->t;
  int64_t ns = 0;
  if (s->sys->roofline && !s->sys->replay_only && !cpu) {
    int64_t ops = 0, tsz = 0;
    int rc;
    if ((rc = attr_int(s, t, i, t->k_num_ops, "num_ops", 0, &ops)) < 0) return rc;
    if ((rc = attr_int(s, t, i, t->k_tensor_size, "tensor_size", 0, &tsz)) < 0) return rc;
    if (tsz == 0) {
      *instant = 1;
      return 0;
    }
    /* Roofline: perf = min(bw * intensity, peak), time = ops / perf. */
    double intensity = (double)ops / (double)tsz;
    double bw = s->sys->local_mem_bw_gbps * 1e9, peak = s->sys->peak_perf_tflops * 1e12;
    double perf = bw * intensity < peak ? bw * intensity : peak;
    double sec = perf > 0 ? (double)ops / perf : 0;
    if (!etsim_des_ns_ok(sec * 1e9)) return past_horizon(s, t, i, "the roofline time", sec * 1e9);
    ns = (int64_t)(sec * 1e9);
  } else {
    /* duration_ns (etsim's generators write it when whole microseconds
     * would round badly) wins over duration_micros. */
    int64_t dns = 0, micros = 0;
    int rc = trace_dur_ns(s, t, i, &micros);
    if (rc) return rc;
    if (!micros) micros = 1;
    const trace_info_t *ti = s->npu[id].ti;
    if (!s->opts->duration_micros && ti->k_duration_ns != UINT32_MAX &&
        etsim_et_trace_attr_int(t, i, ti->k_duration_ns, &dns) == 1 && dns > 0) {
      if (dns > ETSIM_DES_HORIZON_NS) return past_horizon(s, t, i, "duration_ns", (double)dns);
      ns = dns;
      if (ns != micros) {
        s->dur_ns_nodes++;
        s->dur_ns_delta_ps += (ns - micros) * ETSIM_PS_PER_NS;
      }
    } else {
      ns = micros;
    }
  }
  etsim_sim_npu_t *r = &s->res->npu[id];
  int64_t ps = ns * ETSIM_PS_PER_NS;
  /* What-if: --compute-scale and the NPU's speed, to the picosecond (the
   * nominal path above stays bit-identical when both are 1). */
  double f = s->opts->compute_scale > 0 ? s->opts->compute_scale : 1.0;
  if (s->opts->npu_speed) f /= s->opts->npu_speed[id];
  if (f != 1.0) {
    double x = (double)ns * f;
    if (!etsim_des_ns_ok(x)) return past_horizon(s, t, i, "the scaled compute time", x);
    ps = llround(x * ETSIM_PS_PER_NS);
  }
  if (cpu) r->cpu_ps += ps;
  else r->gpu_comp_ps += ps;
  *instant = 0;
  int64_t at = ps > ETSIM_DES_HORIZON_PS - now(s) ? ETSIM_DES_HORIZON_PS + 1 : now(s) + ps;
  return etsim_des_push(&s->q, at, EV_NODE_DONE, id, i);
}

/* A METADATA node that carries PyTorch's process groups, as ASTRA-sim reads
 * them: inputs.values is "['[{"pg_name": "1", "ranks": [...]}, ...]']";
 * empty ranks mean all NPUs; pg_name "0" is the world and needs nothing.
 * Groups are shared by all NPUs (the first definition wins). */
static int issue_metadata(sim_t *s, uint32_t id, uint32_t i) {
  const etsim_et_trace_t *t = s->npu[id].ti->t;
  if (!t->io || !t->io[i]) return 0;
  const etsim_et_io_t *io = &t->ios[t->io[i]];
  if (!(io->flags & 1) || !io->in.values) return 0;
  const char *v = io->in.values;
  size_t n = strlen(v);
  if (n < 4 || strstr(v, "pg_name") == NULL) return 0;
  json_error_t je;
  json_t *arr = json_loadb(v + 2, n - 4, 0, &je);
  if (!json_is_array(arr)) {
    json_decref(arr);
    etsim_warn("%s: node %llu: METADATA inputs are not a process-group list; ignored", t->path,
               (unsigned long long)t->id[i]);
    return 0;
  }
  size_t k;
  json_t *it;
  int rc = 0;
  json_array_foreach(arr, k, it) {
    const char *pg = json_string_value(json_object_get(it, "pg_name"));
    json_t *ranks = json_object_get(it, "ranks");
    char *end;
    long key = pg ? strtol(pg, &end, 10) : -1;
    if (!pg || *end || key <= 0) continue; /* world or not a number */
    if (key >= 2000000) {                  /* as group files: a communicator id fits coll's tags */
      json_decref(arr);
      return etsim_error_set(s->err, ETSIM_EINVAL,
                             "%s: node %llu: process group \"%s\": ids above 1999999 are not "
                             "supported",
                             t->path, (unsigned long long)t->id[i], pg);
    }
    /* with --job: one job's groups, its ranks */
    int64_t mkey = (int64_t)etsim_sim__group_key(s->jobs, id, (uint64_t)key);
    uint32_t n_all = s->n;
    const uint32_t *jn = NULL;
    if (s->jobs) {
      const etsim_sim_job_t *jb = &s->jobs->jobs[s->jobs->job_of[id]];
      n_all = (uint32_t)jb->set->n_ranks;
      jn = jb->npus;
    }
    int known = 0;
    for (size_t g = 0; g < s->n_md; g++)
      if (s->md_key[g] == mkey) known = 1;
    if (known) continue;
    size_t m = json_is_array(ranks) ? json_array_size(ranks) : 0;
    uint32_t *mem = etsim_malloc((m ? m : n_all) * sizeof *mem);
    if (!mem) {
      rc = ETSIM_ENOMEM;
      break;
    }
    for (size_t r = 0; r < (m ? m : n_all); r++) {
      json_int_t x = m ? json_integer_value(json_array_get(ranks, r)) : (json_int_t)r;
      if (x < 0 || x >= (json_int_t)n_all) {
        etsim_free(mem);
        json_decref(arr);
        return etsim_error_set(s->err, ETSIM_EINVAL,
                               "%s: node %llu: process group %s names rank %lld "
                               "outside the %u-%s",
                               t->path, (unsigned long long)t->id[i], pg, (long long)x, n_all,
                               jn ? "rank job" : "NPU network");
      }
      mem[r] = jn ? jn[x] : (uint32_t)x;
    }
    if (s->n_md == s->cap_md) {
      size_t cap = s->cap_md;
      if ((rc = etsim_grow((void **)&s->md, &cap, s->n_md + 1, sizeof *s->md)) ||
          (rc = etsim_grow((void **)&s->md_key, &s->cap_md, s->n_md + 1, sizeof *s->md_key))) {
        etsim_free(mem);
        break;
      }
    }
    /* with --job, ids above the groups' and the worlds' (tags need them
     * distinct between jobs) */
    uint32_t cid = s->jobs ? (uint32_t)(s->opts->groups ? s->opts->groups->n : 0) +
                                 s->jobs->n_jobs + 1 + (uint32_t)s->n_md
                           : (uint32_t)key + 1;
    s->md[s->n_md] = (etsim_comm_t){cid, (uint32_t)(m ? m : n_all), mem};
    s->md_key[s->n_md++] = mkey;
  }
  json_decref(arr);
  return rc;
}

static int issue(sim_t *s, uint32_t id, uint32_t i, int cpu, int res) {
  npu_t *p = &s->npu[id];
  const etsim_et_trace_t *t = p->ti->t;
  account(p, now(s));
  occupy(p, res);
  p->state[i] = ST_ISSUED;
  p->start_ps[i] = now(s);
  int instant = 1, rc = 0;
  if (s->mem && (rc = etsim_sim__mem_start(s->mem, id, i, now(s)))) return rc;
  int type = t->type[i];
  if (s->sys->replay_only && type != ETSIM_ET_METADATA_NODE && type != ETSIM_ET_INVALID_NODE) {
    rc = issue_comp(s, id, i, cpu, &instant);
  } else {
    switch (type) {
      case ETSIM_ET_COMP_NODE:
        rc = issue_comp(s, id, i, cpu, &instant);
        break;
      case ETSIM_ET_COMM_COLL_NODE:
        rc = issue_coll(s, id, i, &instant);
        break;
      case ETSIM_ET_COMM_SEND_NODE:
      case ETSIM_ET_COMM_RECV_NODE:
        rc = issue_p2p(s, id, i, &instant);
        break;
      case ETSIM_ET_MEM_LOAD_NODE:
      case ETSIM_ET_MEM_STORE_NODE:
        rc = issue_mem(s, id, i, &instant);
        break;
      case ETSIM_ET_METADATA_NODE:
        rc = issue_metadata(s, id, i);
        break;
      default:
        break; /* INVALID: finish now */
    }
  }
  if (rc) return rc;
  if (!instant) {
    if (res == RES_COMP && p->comp_active++ == 0) etsim_coll_set_compute(s->coll, id, 1);
    else if (res == RES_COMM || type == ETSIM_ET_COMM_RECV_NODE) p->comm_active++;
  }
  if (instant) return finish_node(s, id, i);
  return 0;
}

static int pass(sim_t *s, uint32_t id) {
  npu_t *p = &s->npu[id];
  if (s->dead && id == s->opts->fail_npu) return 0; /* a failed NPU issues nothing */
  int rc = merge_ready(p);
  if (rc) return rc;
  size_t w = 0, n = p->n_ready;
  for (size_t k = 0; k < n; k++) {
    uint32_t i = p->ready[k];
    int res = p->ti->res[i];
    if (!available(s, p, res)) {
      p->ready[w++] = i;
      continue;
    }
    if ((rc = issue(s, id, i, res == RES_CPU, res))) return rc;
  }
  p->n_ready = w;
  return 0;
}

static int finish_node(sim_t *s, uint32_t id, uint32_t i) {
  npu_t *p = &s->npu[id];
  const etsim_et_trace_t *t = p->ti->t;
  if (p->state[i] != ST_ISSUED)
    return etsim_error_set(s->err, ETSIM_EINTERNAL, "NPU %u: node %llu finished twice", id,
                           (unsigned long long)t->id[i]);
  account(p, now(s));
  release(p, p->ti->res[i]);
  p->state[i] = ST_DONE;
  p->n_done++;
  s->nodes_done++;
  if (s->mem) {
    int rc = etsim_sim__mem_end(s->mem, id, i, now(s));
    if (rc) return rc;
  }
  if (s->opts->record_nodes) {
    etsim_sim_result_t *r = s->res;
    if (r->n_recs % 4096 == 0) {
      void *nb = etsim_realloc(r->recs, (r->n_recs + 4096) * sizeof *r->recs);
      if (!nb) return ETSIM_ENOMEM;
      r->recs = nb;
    }
    uint32_t dims = 0;
    if (t->type[i] == ETSIM_ET_COMM_COLL_NODE) {
      dims = s->done_dims;
    } else if (t->type[i] == ETSIM_ET_COMM_SEND_NODE || t->type[i] == ETSIM_ET_COMM_RECV_NODE) {
      int64_t peer = -1;
      uint32_t k = t->type[i] == ETSIM_ET_COMM_SEND_NODE ? t->k_comm_dst : t->k_comm_src;
      if (k != UINT32_MAX && etsim_et_set_attr_int(s->set, id, i, k, &peer) == 1 &&
          (peer = peer_npu(s, id, peer)) >= 0 && peer < s->n) {
        int d = etsim_topo_first_diff_dim(s->topo, id, (uint32_t)peer);
        if (d >= 0) dims = 1u << d;
      }
    }
    r->recs[r->n_recs++] = (etsim_sim_node_rec_t){id, i, p->start_ps[i], now(s), dims};
  }
  for (uint32_t e = t->data_coff[i]; (s->deps & ETSIM_ET_DEPS_DATA) && e < t->data_coff[i + 1];
       e++) {
    uint32_t c = t->data_chd[e];
    if (--p->deps[c] == 0) {
      p->state[c] = ST_READY;
      int rc = push_u32(&p->incoming, &p->n_in, &p->cap_in, c);
      if (rc) return rc;
    }
  }
  for (uint32_t e = t->ctrl_coff[i]; (s->deps & ETSIM_ET_DEPS_CTRL) && e < t->ctrl_coff[i + 1];
       e++) {
    uint32_t c = t->ctrl_chd[e];
    if (--p->deps[c] == 0) {
      p->state[c] = ST_READY;
      int rc = push_u32(&p->incoming, &p->n_in, &p->cap_in, c);
      if (rc) return rc;
    }
  }
  mark_dirty(s, id);
  if (p->n_done == t->n_nodes) {
    s->res->npu[id].finish_ps = now(s);
    s->npus_done++;
  }
  return 0;
}

/* Completion of a timed node: leave the active sets, then finish. */
static int complete(sim_t *s, uint32_t id, uint32_t i) {
  npu_t *p = &s->npu[id];
  const etsim_et_trace_t *t = p->ti->t;
  account(p, now(s));
  int res = p->ti->res[i];
  if (res == RES_COMP) {
    if (--p->comp_active == 0) etsim_coll_set_compute(s->coll, id, 0);
  } else if (res == RES_COMM || t->type[i] == ETSIM_ET_COMM_RECV_NODE) p->comm_active--;
  return finish_node(s, id, i);
}

static void coll_done(void *user, uint32_t npu, uint64_t token) {
  sim_t *s = user;
  if (s->fail) return;
  s->done_dims = etsim_coll_done_dims(s->coll); /* read by finish_node for collectives */
  int rc = complete(s, npu, (uint32_t)token);
  s->done_dims = 0;
  if (rc) s->fail = rc;
}

/* ------------------------------------------------------------------ run */

/* Load the custom collective traces the system file names: the path as
 * given (ASTRA-sim reads it relative to the working directory), else
 * relative to the system file's folder. */
static int prepare_custom(sim_t *s) {
  for (int op = 0; op < ETSIM_COP_N; op++) {
    const char *prefix = s->sys->custom[op];
    if (!prefix) continue;
    etsim_error_t e1 = {0};
    int rc = etsim_et_set_load(&s->cu_set[op], prefix, 0, &e1);
    if (rc && prefix[0] != '/' && s->sys->dir) {
      char buf[4096];
      snprintf(buf, sizeof buf, "%s/%s", s->sys->dir, prefix);
      etsim_error_t e2 = {0};
      rc = etsim_et_set_load(&s->cu_set[op], buf, 0, &e2);
    }
    if (rc)
      return etsim_error_set(s->err, rc, "%s-implementation-custom: %s", etsim_coll_op_name(op),
                             e1.msg);
    const etsim_et_set_t *set = s->cu_set[op];
    etsim_coll_custom_t *cu = &s->cu[op];
    cu->n_ranks = (uint32_t)set->n_ranks;
    cu->rank = etsim_calloc(set->n_ranks, sizeof *cu->rank);
    if (!cu->rank) return ETSIM_ENOMEM;
    for (size_t r = 0; r < set->n_ranks; r++) {
      const etsim_et_trace_t *t = set->ranks[r];
      etsim_coll_custom_rank_t *g = &cu->rank[r];
      uint32_t n = (uint32_t)t->n_nodes;
      g->n = n;
      size_t m = n ? n : 1;
      g->kind = etsim_malloc(m);
      g->peer = etsim_malloc(m * sizeof *g->peer);
      g->tag = etsim_malloc(m * sizeof *g->tag);
      g->bytes = etsim_malloc(m * sizeof *g->bytes);
      g->dur_ns = etsim_malloc(m * sizeof *g->dur_ns);
      g->n_par = etsim_calloc(m, sizeof *g->n_par);
      g->chd_off = etsim_malloc((m + 1) * sizeof *g->chd_off);
      g->chd = etsim_malloc((t->n_data_edges + t->n_ctrl_edges + 1) * sizeof *g->chd);
      if (!g->kind || !g->peer || !g->tag || !g->bytes || !g->dur_ns || !g->n_par || !g->chd_off ||
          !g->chd)
        return ETSIM_ENOMEM;
      uint32_t k = 0;
      for (uint32_t i = 0; i < n; i++) {
        int ty = t->type[i];
        int64_t v = 0;
        g->kind[i] = ty == ETSIM_ET_COMP_NODE        ? ETSIM_CUSTOM_COMP
                     : ty == ETSIM_ET_COMM_SEND_NODE ? ETSIM_CUSTOM_SEND
                     : ty == ETSIM_ET_COMM_RECV_NODE ? ETSIM_CUSTOM_RECV
                                                     : ETSIM_CUSTOM_NOP;
        g->peer[i] = 0;
        if (g->kind[i] == ETSIM_CUSTOM_SEND || g->kind[i] == ETSIM_CUSTOM_RECV) {
          uint32_t key = g->kind[i] == ETSIM_CUSTOM_SEND ? t->k_comm_dst : t->k_comm_src;
          if (key == UINT32_MAX || etsim_et_trace_attr_int(t, i, key, &v) != 1 || v < 0 ||
              (uint64_t)v >= set->n_ranks)
            return etsim_error_set(s->err, ETSIM_EFORMAT,
                                   "%s: node %llu: custom %s needs comm_%s "
                                   "naming one of its %zu ranks",
                                   t->path, (unsigned long long)t->id[i],
                                   g->kind[i] == ETSIM_CUSTOM_SEND ? "send" : "receive",
                                   g->kind[i] == ETSIM_CUSTOM_SEND ? "dst" : "src", set->n_ranks);
          g->peer[i] = (uint32_t)v;
        }
        v = 0;
        if (t->k_comm_tag != UINT32_MAX) etsim_et_trace_attr_int(t, i, t->k_comm_tag, &v);
        g->tag[i] = (uint32_t)v;
        v = 0;
        if (t->k_comm_size != UINT32_MAX) etsim_et_trace_attr_int(t, i, t->k_comm_size, &v);
        if (v < 0)
          return etsim_error_set(s->err, ETSIM_EFORMAT, "%s: node %llu: negative comm_size %lld",
                                 t->path, (unsigned long long)t->id[i], (long long)v);
        g->bytes[i] = (uint64_t)v;
        if ((rc = trace_dur_ns(s, t, i, &g->dur_ns[i]))) return rc;
        g->chd_off[i] = k;
        for (uint32_t e = t->data_coff[i]; e < t->data_coff[i + 1]; e++)
          g->chd[k++] = t->data_chd[e];
        for (uint32_t e = t->ctrl_coff[i]; e < t->ctrl_coff[i + 1]; e++)
          g->chd[k++] = t->ctrl_chd[e];
      }
      g->chd_off[n] = k;
      for (uint32_t e = 0; e < k; e++) g->n_par[g->chd[e]]++;
    }
    if ((rc = etsim_coll_set_custom(s->coll, (etsim_cop_t)op, cu))) return rc;
  }
  return 0;
}

static int prepare_traces(sim_t *s) {
  const etsim_et_set_t *set = s->set;
  s->ti = etsim_calloc(set->n_traces, sizeof *s->ti);
  if (!s->ti) return ETSIM_ENOMEM;
  for (size_t k = 0; k < set->n_traces; k++) {
    const etsim_et_trace_t *t = set->traces[k];
    trace_info_t *ti = &s->ti[k];
    ti->t = t;
    int64_t kd = etsim_intern_find(&t->strings, "duration_ns");
    ti->k_duration_ns = kd < 0 ? UINT32_MAX : (uint32_t)kd;
    ti->n_par = etsim_calloc(t->n_nodes ? t->n_nodes : 1, sizeof *ti->n_par);
    ti->res = etsim_malloc(t->n_nodes ? t->n_nodes : 1);
    if (!ti->n_par || !ti->res) return ETSIM_ENOMEM;
    for (size_t i = 0; i < t->n_nodes; i++) {
      ti->res[i] = (uint8_t)resource_of(t, i);
      uint32_t n = 0;
      for (uint32_t e = t->data_off[i]; (s->deps & ETSIM_ET_DEPS_DATA) && e < t->data_off[i + 1];
           e++)
        if (!(t->data_par[e] & ETSIM_ET_DANGLING)) n++;
        else ti->n_danglers++;
      for (uint32_t e = t->ctrl_off[i]; (s->deps & ETSIM_ET_DEPS_CTRL) && e < t->ctrl_off[i + 1];
           e++)
        if (!(t->ctrl_par[e] & ETSIM_ET_DANGLING)) n++;
        else ti->n_danglers++;
      ti->n_par[i] = n;
    }
    if (ti->n_danglers)
      etsim_warn("%s: %llu dependencies on node ids that are not in the file are ignored", t->path,
                 (unsigned long long)ti->n_danglers);
  }
  return 0;
}

static int prepare_npus(sim_t *s) {
  s->npu = etsim_calloc(s->n, sizeof *s->npu);
  if (!s->npu) return ETSIM_ENOMEM;
  for (uint32_t k = 0; k < s->n_sim; k++) {
    uint32_t id = s->sim_ids[k];
    npu_t *p = &s->npu[id];
    p->ti = &s->ti[s->set->rank_trace[id]];
    size_t n = p->ti->t->n_nodes ? p->ti->t->n_nodes : 1;
    p->deps = etsim_malloc(n * sizeof *p->deps);
    p->state = etsim_calloc(n, 1);
    p->start_ps = etsim_malloc(n * sizeof *p->start_ps);
    if (!p->deps || !p->state || !p->start_ps) return ETSIM_ENOMEM;
    memcpy(p->deps, p->ti->n_par, p->ti->t->n_nodes * sizeof *p->deps);
    p->comm_slot = -1;
    for (size_t i = 0; i < p->ti->t->n_nodes; i++)
      if (p->deps[i] == 0) {
        p->state[i] = ST_READY;
        int rc = push_u32(&p->incoming, &p->n_in, &p->cap_in, (uint32_t)i);
        if (rc) return rc;
      }
  }
  return 0;
}

static void free_sim(sim_t *s) {
  if (s->npu)
    for (uint32_t k = 0; k < s->n_sim; k++) {
      npu_t *p = &s->npu[s->sim_ids[k]];
      etsim_free(p->deps);
      etsim_free(p->state);
      etsim_free(p->start_ps);
      etsim_free(p->ready);
      etsim_free(p->incoming);
    }
  etsim_free(s->npu);
  if (s->ti)
    for (size_t k = 0; k < s->set->n_traces; k++) {
      etsim_free(s->ti[k].n_par);
      etsim_free(s->ti[k].res);
    }
  etsim_free(s->ti);
  etsim_free(s->dirty);
  etsim_free(s->mem_free_ps);
  for (size_t g = 0; g < s->n_md; g++) etsim_free((void *)s->md[g].members);
  etsim_free(s->md);
  etsim_free(s->md_key);
  for (int op = 0; op < ETSIM_COP_N; op++) {
    for (uint32_t r = 0; s->cu[op].rank && r < s->cu[op].n_ranks; r++) {
      etsim_coll_custom_rank_t *g = &s->cu[op].rank[r];
      etsim_free(g->kind);
      etsim_free(g->peer);
      etsim_free(g->tag);
      etsim_free(g->bytes);
      etsim_free(g->dur_ns);
      etsim_free(g->n_par);
      etsim_free(g->chd_off);
      etsim_free(g->chd);
    }
    etsim_free(s->cu[op].rank);
    etsim_et_set_free(s->cu_set[op]);
  }
  etsim_sim__mem_free(s->mem);
  etsim_sim__pool_free(s->pool);
  etsim_coll_destroy(s->coll);
  etsim_net_destroy(s->net);
  etsim_des_free(&s->q);
  etsim_free(s->sim_ids);
  etsim_free(s->gcomm);
  etsim_free(s->tie);
  etsim_u64map_free(&s->gidx);
}

/* Issue passes in the order NPUs became dirty (NPU order at the start, as
 * ASTRA-sim fires its workloads), so shared resources such as a memory
 * pool serve them in that order. */
static int drain_dirty(sim_t *s) {
  for (size_t k = 0; k < s->n_dirty; k++) {
    uint32_t id = s->dirty[k];
    s->npu[id].dirty = 0;
    s->q.pusher = id;
    int rc = pass(s, id);
    if (rc) return rc;
    if (s->fail) return s->fail;
  }
  s->n_dirty = 0;
  return 0;
}

/* What-if failure: the run stopped short because NPU fail_npu failed.  The
 * report names the communication nodes still in flight (the blocked
 * collectives, by trace node and communicator, with the NPUs stuck in
 * each) and the NPUs that cannot finish. */
static int report_failure(sim_t *s, etsim_sim_result_t *r) {
  enum { MAXB = 4 };
  struct {
    uint64_t node;
    const char *name, *what, *pg;
    uint32_t *ids, k;
  } bl[MAXB];
  uint32_t nb = 0, more = 0, blocked = 0;
  uint32_t *stuck = etsim_malloc(s->n * sizeof *stuck);
  int rc = stuck ? 0 : ETSIM_ENOMEM;
  memset(bl, 0, sizeof bl);
  for (uint32_t id = 0; id < s->n && !rc; id++) {
    npu_t *p = &s->npu[id];
    if (!p->ti) continue; /* idle (--job) */
    const etsim_et_trace_t *t = p->ti->t;
    if (p->n_done == t->n_nodes) continue;
    stuck[blocked++] = id;
    for (size_t i = 0; i < t->n_nodes && !rc; i++) {
      int ty = t->type[i];
      if (p->state[i] != ST_ISSUED ||
          (ty != ETSIM_ET_COMM_COLL_NODE && ty != ETSIM_ET_COMM_SEND_NODE &&
           ty != ETSIM_ET_COMM_RECV_NODE))
        continue;
      const char *pg = etsim_et_set_attr_str(s->set, id, i, t->k_pg_name);
      if (!pg || !*pg || strcmp(pg, "0") == 0) pg = "world";
      const char *what = ty == ETSIM_ET_COMM_SEND_NODE   ? "send"
                         : ty == ETSIM_ET_COMM_RECV_NODE ? "receive"
                                                         : "collective";
      int64_t ct;
      if (ty == ETSIM_ET_COMM_COLL_NODE && t->k_comm_type != UINT32_MAX &&
          etsim_et_trace_attr_int(t, i, t->k_comm_type, &ct) == 1)
        what = etsim_coll_type_name((int)ct);
      uint32_t b = 0;
      while (b < nb && !(bl[b].node == t->id[i] && strcmp(bl[b].pg, pg) == 0)) b++;
      if (b == nb) {
        if (nb == MAXB) {
          more++;
          continue;
        }
        bl[nb].ids = etsim_malloc(s->n * sizeof *bl[nb].ids);
        if (!bl[nb].ids) {
          rc = ETSIM_ENOMEM;
          break;
        }
        bl[nb].node = t->id[i];
        bl[nb].name = t->name[i];
        bl[nb].what = what;
        bl[nb].pg = pg;
        nb++;
      }
      if (!bl[b].k || bl[b].ids[bl[b].k - 1] != id) bl[b].ids[bl[b].k++] = id;
    }
  }
  if (!rc) {
    char *buf = r->failure, rb[160];
    size_t n = sizeof r->failure, len = 0;
    /* what failed: the NPU, and messages the network could not route */
    if (s->dead)
      len += (size_t)snprintf(buf + len, n - len, "NPU %u failed at t=%lld ns; ", s->opts->fail_npu,
                              (long long)(s->opts->fail_ps / ETSIM_PS_PER_NS));
    if (s->net->stats.held_msgs && !s->dead)
      len += (size_t)snprintf(buf + len, n - len, "%.400s%s; ", s->net->stats.held,
                              s->net->stats.held_msgs > 1 ? " and more" : "");
    len += (size_t)snprintf(
        buf + len, n - len, "the run stopped at t=%lld ns with %u of %u NPUs unable to finish",
        (long long)((now(s) > s->net->stats.last_ps ? now(s) : s->net->stats.last_ps) /
                    ETSIM_PS_PER_NS),
        blocked, s->n);
    etsim_format_ranges(rb, sizeof rb, stuck, blocked);
    len += (size_t)snprintf(buf + len, n - len, " (NPUs %s)", rb);
    for (uint32_t b = 0; b < nb && len < n - 200; b++) {
      etsim_format_ranges(rb, sizeof rb, bl[b].ids, bl[b].k);
      len += (size_t)snprintf(buf + len, n - len,
                              "%s %s node %llu \"%.40s\" (communicator %.20s) blocked on NPUs %s",
                              b ? ";" : "; blocked:", bl[b].what, (unsigned long long)bl[b].node,
                              bl[b].name ? bl[b].name : "", bl[b].pg, rb);
    }
    if (more && len < n - 40) snprintf(buf + len, n - len, "; and %u more blocked node runs", more);
    r->failed = 1;
    r->n_blocked = blocked;
  }
  for (uint32_t b = 0; b < nb; b++) etsim_free(bl[b].ids);
  etsim_free(stuck);
  return rc;
}

/* Describe unfinished NPUs for a deadlock report. */
static int report_stuck(sim_t *s, const char *coll_msg) {
  char buf[1200];
  size_t len = 0;
  uint32_t shown = 0, stuck = 0;
  for (uint32_t k = 0; k < s->n_sim; k++) {
    uint32_t id = s->sim_ids[k];
    npu_t *p = &s->npu[id];
    const etsim_et_trace_t *t = p->ti->t;
    if (p->n_done == t->n_nodes) continue;
    stuck++;
    if (shown >= 6 || len > sizeof buf - 200) continue;
    shown++;
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%sNPU %u waits on", shown > 1 ? "; " : "",
                            id);
    int listed = 0;
    for (size_t i = 0; i < t->n_nodes && listed < 3; i++)
      if (p->state[i] == ST_ISSUED) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, " node %llu (%s, issued)",
                                (unsigned long long)t->id[i], etsim_et_node_type_name(t->type[i]));
        listed++;
      }
    for (size_t i = 0; i < t->n_nodes && listed < 3; i++)
      if (p->state[i] == ST_WAIT) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, " node %llu (%s, %u parents left)",
                                (unsigned long long)t->id[i], etsim_et_node_type_name(t->type[i]),
                                p->deps[i]);
        listed++;
      }
    if (len >= sizeof buf) len = sizeof buf - 1;
  }
  /* Control edges of PyTorch-derived traces (the caller) can contradict
   * the data edges: say how to run on data edges alone. */
  int ctrl = 0;
  for (size_t k = 0; k < s->set->n_traces && (s->deps & ETSIM_ET_DEPS_CTRL); k++)
    ctrl |= s->set->traces[k]->n_ctrl_edges > 0;
  const char *hint = ctrl ? " (--deps data runs on data dependencies alone)" : "";
  if (!stuck) /* every trace ran to its end, but the system layer did not */
    return etsim_error_set(
        s->err, ETSIM_EDEADLOCK, "deadlock at t=%lld ns: every NPU finished its trace, but %s",
        (long long)(now(s) / ETSIM_PS_PER_NS), coll_msg ? coll_msg : "messages are still waiting");
  return etsim_error_set(s->err, ETSIM_EDEADLOCK,
                         "deadlock at t=%lld ns: %u of %u NPUs never "
                         "finished: %s%s%s%s",
                         (long long)(now(s) / ETSIM_PS_PER_NS), stuck, s->n, buf,
                         coll_msg ? "; " : "", coll_msg ? coll_msg : "", hint);
}

/*
 * A reduced run must see, at each representative, events in an order the
 * exact run would also use.  Two events for one NPU at one instant keep
 * their order in both runs when they were scheduled at different times, or
 * by one NPU (whose own order the representative reproduces); when
 * different NPUs scheduled them at one instant, the exact run orders them
 * by which of those NPUs ran first, which the reduced run cannot know.
 * That is harmless when both wake the same handler (two arrivals for one
 * stream commute) or one only counts an early arrival; otherwise the
 * reduction is abandoned (docs/sim.md).  Returns 1 when the order may
 * matter.
 */
static int tie_check(sim_t *s, const etsim_des_event_t *ev) {
  uint32_t npu;
  uint64_t key;
  if (ev->type < ETSIM_COLL_EV_END) {
    etsim_coll_event_key(s->coll, ev, &npu, &key);
  } else {
    npu = ev->a;
    key = 3ull << 60 | ev->b; /* a node's completion */
  }
  if (npu >= s->n) return 0; /* a switch's event (in-network): no NPU's state */
  struct tie *x = &s->tie[npu];
  uint32_t pusher = s->q.popped_pusher;
  if (x->t != ev->t_ps || x->push != s->q.popped_push_ps) {
    *x = (struct tie){ev->t_ps, s->q.popped_push_ps, pusher, pusher, 0, 0, key};
    return 0;
  }
  if (pusher != x->pusher) {
    x->multi_pusher = 1;
    x->pusher2 = pusher;
  }
  if (key) {
    if (!x->key) x->key = key;
    else if (key != x->key) x->multi_key = 1;
  }
  if (x->multi_pusher && x->multi_key) {
    snprintf(s->tie_why, sizeof s->tie_why,
             "at t=%lld ns NPU %u receives simultaneous events that NPUs %u and %u scheduled at "
             "one instant and that may not commute",
             (long long)(ev->t_ps / ETSIM_PS_PER_NS), npu, x->pusher, x->pusher2);
    return 1;
  }
  return 0;
}

/* The caller's progress line, at most twice a second. */
static void report_progress(sim_t *s) {
  double el = etsim_stopwatch_wall(s->sw);
  if (el < s->next_report_s) return;
  s->next_report_s = el + 0.5;
  uint64_t g = s->sym ? s->sym->order : 1;
  etsim_sim_progress_t p = {
      s->q.now_ps, (uint32_t)(s->npus_done * g),
      s->n,        s->nodes_total ? (double)s->nodes_done / (double)s->nodes_total : 0,
      el,          s->q.n_popped};
  s->opts->progress(s->opts->progress_user, &p);
}

/* A reduced run's per-NPU records (node records, memory samples: arrays
 * of `size`-byte elements that start with their uint32_t NPU id): grouped
 * by NPU, every NPU given a copy of its representative's records in their
 * order (a stable counting sort, then one block per NPU). */
static int replicate_by_npu(const sim_t *s, void **arr, size_t *n, size_t size) {
  size_t n0 = *n, w = 0;
  if (!n0) return 0;
  const char *in = *arr;
  char *out = etsim_malloc(n0 * s->sym->order * size), *tmp = etsim_malloc(n0 * size);
  size_t *cnt = etsim_calloc(s->n + 1, sizeof *cnt), *cur = etsim_malloc(s->n * sizeof *cur);
  if (!out || !tmp || !cnt || !cur) {
    etsim_free(out);
    etsim_free(tmp);
    etsim_free(cnt);
    etsim_free(cur);
    return ETSIM_ENOMEM;
  }
  uint32_t id;
  for (size_t k = 0; k < n0; k++) {
    memcpy(&id, in + k * size, sizeof id);
    cnt[id + 1]++;
  }
  for (id = 0; id < s->n; id++) cnt[id + 1] += cnt[id];
  memcpy(cur, cnt, s->n * sizeof *cur);
  for (size_t k = 0; k < n0; k++) {
    memcpy(&id, in + k * size, sizeof id);
    memcpy(tmp + cur[id]++ * size, in + k * size, size);
  }
  for (id = 0; id < s->n; id++) {
    uint32_t rep = s->sym->rep[id];
    for (size_t k = cnt[rep]; k < cnt[rep + 1]; k++, w++) {
      memcpy(out + w * size, tmp + k * size, size);
      memcpy(out + w * size, &id, sizeof id);
    }
  }
  etsim_free(tmp);
  etsim_free(cnt);
  etsim_free(cur);
  etsim_free(*arr);
  *arr = out;
  *n = w;
  return 0;
}

/* Per-link counters of a reduced run: a message a representative sends is
 * counted under the NPU it is delivered from (an NPU of the same class), so
 * each class's counters together are one member's injection, which is
 * every member's. */
static void replicate_links(sim_t *s, etsim_sim_result_t *r) {
  size_t nd = (size_t)s->topo->ndims;
  if (r->links.n != (size_t)s->n * nd) return;
  for (size_t d = 0; d < nd; d++) {
    for (uint32_t id = 0; id < s->n; id++) {
      uint32_t rep = s->sym->rep[id];
      if (rep == id) continue;
      r->links.bytes[rep * nd + d] += r->links.bytes[id * nd + d];
      r->links.busy_ps[rep * nd + d] += r->links.busy_ps[id * nd + d];
    }
    for (uint32_t id = 0; id < s->n; id++) {
      uint32_t rep = s->sym->rep[id];
      if (rep == id) continue;
      r->links.bytes[id * nd + d] = r->links.bytes[rep * nd + d];
      r->links.busy_ps[id * nd + d] = r->links.busy_ps[rep * nd + d];
    }
  }
}

/* Results of simulated NPUs, then copies for the rest of their classes. */
static int collect(sim_t *s) {
  etsim_sim_result_t *r = s->res;
  for (uint32_t k = 0; k < s->n_sim; k++) {
    uint32_t id = s->sim_ids[k];
    npu_t *p = &s->npu[id];
    etsim_sim_npu_t *o = &r->npu[id];
    account(p, o->finish_ps);
    o->exposed_ps = o->finish_ps - o->gpu_comp_ps;
    o->exposed_true_ps = p->exposed_ps;
    o->comm_busy_ps = p->comm_union_ps;
    o->nodes = p->ti->t->n_nodes;
    memcpy(o->exposed_by_op, p->exposed_by_op, sizeof o->exposed_by_op);
    etsim_coll_dim_times(s->coll, id, o->coll_busy_by_dim, o->coll_exposed_by_dim);
    if (s->mem) o->peak_mem_bytes = etsim_sim__mem_peak(s->mem, id);
    if (o->finish_ps > r->total_ps) r->total_ps = o->finish_ps;
  }
  if (s->mem) {
    r->mem_tracked = 1;
    etsim_sim__mem_take_samples(s->mem, &r->mem, &r->n_mem);
    int rc = s->sym ? replicate_by_npu(s, (void **)&r->mem, &r->n_mem, sizeof *r->mem) : 0;
    if (rc) return rc;
  }
  r->n_simulated = s->n_sim;
  r->class_size = 1;
  r->dur_ns_nodes = s->dur_ns_nodes;
  r->dur_ns_delta_ps = s->dur_ns_delta_ps;
  if (!s->sym) return 0;
  /* Every NPU's timeline is its representative's (docs/sim.md). */
  uint64_t g = s->sym->order;
  for (uint32_t id = 0; id < s->n; id++) r->npu[id] = r->npu[s->sym->rep[id]];
  for (int k = 0; k < ETSIM_COP_N + 2; k++) {
    r->bytes_by_op[k] *= g;
    r->count_by_op[k] *= g;
  }
  r->dur_ns_nodes *= g;
  r->dur_ns_delta_ps *= (int64_t)g;
  r->class_size = g;
  /* Records grouped by NPU, each NPU's in its representative's order. */
  if (s->opts->record_nodes)
    return replicate_by_npu(s, (void **)&r->recs, &r->n_recs, sizeof *r->recs);
  return 0;
}

/* After the event loop of run_once: a failed or stuck run is reported,
 * a reduced run proves its costs, and the results are collected (and
 * scaled to every NPU of a class).  Returns as run_once does. */
static int finish_run(sim_t *s, etsim_sim_result_t *r) {
  int rc = 0;
  const etsim_sim_opts_t *opts = s->opts;
  {
    etsim_error_t ce = {0};
    int stuck = 0;
    for (uint32_t k = 0; k < s->n_sim; k++)
      if (s->npu[s->sim_ids[k]].n_done != s->npu[s->sim_ids[k]].ti->t->n_nodes) stuck = 1;
    int crc = etsim_coll_check_idle(s->coll, &ce);
    /* a failed NPU, or messages a failed cable left without a route */
    if ((s->dead || s->net->stats.held_msgs) && stuck) {
      if ((rc = report_failure(s, r))) return rc;
    } else if (s->dead) {
      r->fail_after_end = 1; /* it had finished its trace when it failed */
    } else if (stuck || crc) {
      /* A reduced run reports what the exact run would: run that. */
      rc = s->sym ? 1 : report_stuck(s, crc ? ce.msg : NULL);
      if (s->sym) snprintf(s->tie_why, sizeof s->tie_why, "the run does not finish");
      return rc;
    }
  }
  if (s->sym && !etsim_sim__check_costs(s->sym, s->topo, etsim_coll_pairs(s->coll), s->tie_why,
                                        sizeof s->tie_why)) {
    rc = 1;
    return rc;
  }
  if ((rc = collect(s))) return rc;
  r->events = s->q.n_popped;
  r->max_pending = s->q.max_pending;
  r->hbm_bytes = opts->hbm_bytes;
  r->offload_priced = opts->memory && opts->memory->type != ETSIM_MEM_NONE;
  r->offload_applied = r->offload_priced && opts->offload;
  etsim_sim__mem_offload(r, opts);
  if (s->net->ops->finish && (rc = s->net->ops->finish(s->net, s->err))) return rc;
  r->net = s->net->stats;
  etsim_coll_get_stats(s->coll, &r->coll);
  if (s->net->links.n) {
    /* the counters outlive the network */
    r->links = s->net->links;
    memset(&s->net->links, 0, sizeof s->net->links);
    r->links_backend = s->net->ops->name;
    if (s->sym) replicate_links(s, r);
  }
  r->topo = *s->topo;
  if (s->sym) {
    uint64_t g = s->sym->order;
    r->net.messages *= g;
    r->net.bytes *= g;
    for (int d = 0; d < ETSIM_TOPO_MAX_DIMS; d++) r->net.bytes_per_dim[d] *= g;
    r->coll.collectives *= g;
    r->coll.streams *= g;
    r->coll.messages *= g;
  }
  return 0;
}

/* run_once, step 1: the NPUs this run simulates, the network, the
 * collective layer and the checks that refuse what cannot run, so the
 * event loop only ever meets a runnable setup. */
static int setup_engine(sim_t *s) {
  int rc;
  const etsim_sim_opts_t *opts = s->opts;
  /* with --job, NPUs of no job are not simulated: they idle */
  s->n_sim = s->sym ? s->sym->n_reps : s->jobs ? s->jobs->n_active : s->n;
  s->sim_ids = etsim_malloc((s->n_sim ? s->n_sim : 1) * sizeof *s->sim_ids);
  if (!s->sim_ids) return ETSIM_ENOMEM;
  for (uint32_t k = 0; k < s->n_sim; k++)
    s->sim_ids[k] = s->sym ? s->sym->reps[k] : s->jobs ? s->jobs->active[k] : k;
  if ((rc = etsim_net_create(&s->net, opts->backend ? opts->backend : "analytical", s->topo, &s->q,
                             ETSIM_COLL_EV_DELIVER, ETSIM_COLL_EV_HOP, opts->net, s->err)))
    return rc;
  if (opts->link_stats && (rc = etsim_net_links_enable(s->net))) {
    if (rc == ETSIM_EUNSUPPORTED)
      etsim_error_set(s->err, rc,
                      "per-link statistics: the %s backend keeps none (analytical and "
                      "congestion do; flow and packet show ports with --net-timeline)",
                      s->net->ops->name);
    return rc;
  }
  if ((rc = etsim_coll_create(&s->coll, s->sys, s->topo, s->net, &s->q, coll_done, s, s->err)))
    return rc;
  if ((rc = prepare_custom(s))) return rc;
  /* Algorithms that cannot run (halvingDoubling on 6 NPUs, ...) are
   * refused now rather than found deadlocked later. */
  if (!s->jobs &&
      (rc = etsim_sim__check_collectives(s->set, s->coll, s->sys, opts->groups, NULL, s->err)))
    return rc;
  for (uint32_t k = 0; s->jobs && k < s->jobs->n_jobs; k++) {
    const sim_jobs_t *jm = s->jobs;
    if ((rc = etsim_sim__check_collectives(jm->jobs[k].set, s->coll, s->sys, &jm->job_groups[k],
                                           &jm->world[k], s->err)))
      return rc;
  }
  if (opts->memory && opts->memory->type == ETSIM_MEM_HIER_POOL &&
      (rc = etsim_sim__pool_create(opts->memory, s->n, EV_NODE_DONE, &s->pool)))
    return rc;
  return 0;
}

/* run_once, step 2: the map from a trace's communicator id to its group,
 * and under symmetry the orbit-tagged copies, so a node's pg_name finds
 * its group in O(1). Returns 0 or ETSIM_ENOMEM. */
static int index_groups(sim_t *s) {
  const etsim_sim_opts_t *opts = s->opts;
  for (size_t k = 0; !s->jobs && k < opts->groups->n; k++) {
    uint32_t one;
    if (etsim_u64map_put(&s->gidx, opts->groups->g[k].id, (uint32_t)k, &one) < 0)
      return ETSIM_ENOMEM;
  }
  /* --job: a job's traces name its groups by their own ids */
  for (uint32_t j = 0; s->jobs && j < s->jobs->n_jobs; j++) {
    const etsim_comm_groups_t *jg = &s->jobs->job_groups[j];
    for (size_t k = 0; k < jg->n; k++) {
      uint32_t one;
      if (etsim_u64map_put(&s->gidx, (uint64_t)j << 32 | jg->g[k].id,
                           s->jobs->group_base[j] + (uint32_t)k, &one) < 0)
        return ETSIM_ENOMEM;
    }
  }
  if (s->sym) {
    /* Each communicator carries its orbit's id in tags, so a message and
     * its image match the same receive. */
    s->gcomm = etsim_malloc((opts->groups->n ? opts->groups->n : 1) * sizeof *s->gcomm);
    if (!s->gcomm) return ETSIM_ENOMEM;
    for (size_t k = 0; k < opts->groups->n; k++) {
      s->gcomm[k] = opts->groups->g[k];
      s->gcomm[k].id = s->sym->tag_id[k];
    }
  }
  return 0;
}

/* run_once, step 3: per-run state (symmetry ties, memory, traces, NPUs),
 * every simulated NPU's first nodes issued and a planned failure queued,
 * so the loop starts from a queue that already holds the first events. */
static int setup_state(sim_t *s) {
  int rc;
  const etsim_sim_opts_t *opts = s->opts;
  if (s->sym) {
    etsim_coll_set_symmetry(s->coll, &s->sym->cs);
    if (!(s->tie = etsim_calloc(s->n, sizeof *s->tie))) return ETSIM_ENOMEM;
    for (uint32_t k = 0; k < s->n; k++) s->tie[k].t = -1;
  }
  if (opts->memory && opts->memory->type != ETSIM_MEM_NONE) {
    s->n_mem = opts->memory->type == ETSIM_MEM_POOL ? 1
               : opts->memory->type == ETSIM_MEM_PER_NPU
                   ? s->n
                   : (opts->memory->npus_per_node
                          ? (s->n + opts->memory->npus_per_node - 1) / opts->memory->npus_per_node
                          : 1);
    s->mem_free_ps = etsim_calloc(s->n_mem, sizeof *s->mem_free_ps);
    if (!s->mem_free_ps) return ETSIM_ENOMEM;
  }
  if (prepare_traces(s) || prepare_npus(s)) return ETSIM_ENOMEM;
  if ((rc = etsim_sim__mem_create(s->set, s->n, s->sim_ids, s->n_sim, opts->record_nodes, &s->mem,
                                  s->err)))
    return rc;
  for (uint32_t k = 0; k < s->n_sim; k++) {
    mark_dirty(s, s->sim_ids[k]);
    s->nodes_total += s->npu[s->sim_ids[k]].ti->t->n_nodes;
  }
  if (opts->fail_set) {
    /* at 0 the NPU is dead before its first node issues */
    if (opts->fail_ps == 0) s->dead = 1;
    else if ((rc = etsim_des_push(&s->q, opts->fail_ps, EV_FAIL, opts->fail_npu, 0))) return rc;
  }
  return drain_dirty(s);
}

/* Memory-bound: start loading what the events a few places ahead touch
 * (their entries now, the streams they wake a bit later). Prefetch
 * distances (events ahead): entries and streams at 12, what they point to
 * at 6 (measured best of 4..48 on 16,384 NPUs). */
static inline void prefetch_ahead(sim_t *s) {
  const uint32_t pf_far = 12, pf_near = 6;
  uint32_t pt;
  uint64_t pb;
  if (etsim_des_peek(&s->q, pf_far, &pt, &pb) && pt < ETSIM_COLL_EV_END)
    etsim_coll_prefetch(s->coll, pt, pb, 0);
  if (etsim_des_peek(&s->q, pf_near, &pt, &pb) && pt < ETSIM_COLL_EV_END)
    etsim_coll_prefetch(s->coll, pt, pb, 1);
}

/* One popped event to its handler, with the failed NPU's events dropped;
 * kept apart from the loop so the loop reads as pop, prefetch, handle.
 * Returns 0, a negative code, or 1 when a reduced run found a tie it
 * cannot represent. */
static inline int handle_event(sim_t *s, const etsim_des_event_t *ev) {
  int rc;
  const etsim_sim_opts_t *opts = s->opts;
  if (s->sym && tie_check(s, ev)) return 1;
  if (s->dead) {
    /* The failed NPU handles nothing: no compute ends, no message of its
     * streams goes out, nothing reaches it. */
    uint32_t who = UINT32_MAX;
    uint64_t key;
    if (ev->type < ETSIM_COLL_EV_END) etsim_coll_event_key(s->coll, ev, &who, &key);
    else if (ev->type == EV_NODE_DONE) who = ev->a;
    if (who == opts->fail_npu) return 0;
  }
  if (ev->type == EV_FAIL) {
    account(&s->npu[ev->a], now(s));
    s->dead = 1;
    return 0;
  }
  if (ev->type < ETSIM_COLL_EV_END) {
    rc = etsim_coll_event(s->coll, ev, s->err);
  } else if (ev->type == EV_NODE_DONE) {
    s->q.pusher = ev->a;
    rc = complete(s, ev->a, (uint32_t)ev->b);
  } else {
    rc = ETSIM_EINTERNAL;
  }
  if (!rc) rc = s->fail;
  if (!rc) rc = drain_dirty(s);
  return rc;
}

/* run_once, step 4: events in time order until the queue is empty,
 * letting a network with its own engine catch up first. Returns as
 * handle_event does. */
static int event_loop(sim_t *s) {
  int rc;
  etsim_des_event_t ev;
  int engine = etsim_net_has_engine(s->net);
  for (;;) {
    if (engine) {
      /* Let the network's own engine catch up to the next event here. */
      int64_t tn = s->net->ops->next_ps(s->net);
      int64_t ts = etsim_des_next_time(&s->q);
      if (tn != INT64_MAX && tn <= ts) {
        if ((rc = s->net->ops->advance(s->net, tn, s->err))) return rc;
        continue;
      }
    }
    if (!etsim_des_pop(&s->q, &ev)) break;
    if (s->opts->progress && !(s->q.n_popped & 0xffff)) report_progress(s);
    prefetch_ahead(s);
    if ((rc = handle_event(s, &ev))) return rc;
  }
  return 0;
}

/* One run: every NPU, or (sym non-NULL) the class representatives.
 * Returns 0, a negative code, or 1 when a reduced run found it is not
 * exact after all (s->tie_why or the cost check says why; r is then
 * incomplete and the caller runs again without sym). */
static int run_once(sim_t *s, etsim_sim_result_t *r) {
  int rc;
  etsim_des_init(&s->q);
  if (s->sym) etsim_des_track(&s->q);
  if ((rc = setup_engine(s))) goto fail;
  if (s->opts->groups && (rc = index_groups(s))) goto fail;
  if ((rc = setup_state(s))) goto fail;
  if ((rc = event_loop(s))) goto fail;
  if ((rc = finish_run(s, r))) goto fail;
  return 0;
fail:
  if (rc == ETSIM_ENOMEM && s->err && !s->err->code)
    etsim_error_set(s->err, rc, "simulation: out of memory");
  if (rc == ETSIM_ERANGE && s->err && !s->err->code)
    etsim_error_set(s->err, rc,
                    "simulation: at %.3f us a message or delay would end beyond the simulated "
                    "clock's horizon (2^62 ps, about 53 days): check comm_size against the "
                    "network's bandwidth and latency",
                    (double)s->q.now_ps / 1e6);
  return rc;
}

static int run_all(const etsim_et_set_t *set, const etsim_topo_t *topo,
                   const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                   const sim_jobs_t *jobs, etsim_sim_result_t **out, etsim_error_t *err) {
  if (set->n_ranks != topo->total)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "the workload has %zu ranks but the network has %u "
                           "NPUs",
                           set->n_ranks, topo->total);
  etsim_stopwatch_t sw;
  etsim_stopwatch_start(&sw);
  sim_sym_t sym;
  memset(&sym, 0, sizeof sym);
  int have_sym = 0, rc;
  char why[240] = "--exact";
  if (jobs) /* the jobs' NPUs differ from the idle ones, and jobs from jobs */
    snprintf(why, sizeof why, "%u jobs share the network (--job)", jobs->n_jobs);
  else if (!opts->exact) {
    have_sym = etsim_sim__find_symmetry(set, topo, sys, opts, &sym, why, sizeof why);
    if (have_sym < 0) return etsim_error_set(err, have_sym, "simulation: out of memory");
  }
  for (int attempt = 0;; attempt++) {
    sim_t s;
    memset(&s, 0, sizeof s);
    s.set = set;
    s.topo = topo;
    s.sys = sys;
    s.opts = opts;
    s.deps = opts->deps ? opts->deps : ETSIM_ET_DEPS_DATA | ETSIM_ET_DEPS_CTRL;
    s.n = topo->total;
    s.err = err;
    s.sym = have_sym ? &sym : NULL;
    s.jobs = jobs;
    s.sw = &sw;
    s.next_report_s = 1.0; /* short runs print nothing */
    etsim_u64map_init(&s.gidx);
    etsim_sim_result_t *r = etsim_calloc(1, sizeof *r);
    rc = ETSIM_ENOMEM;
    if (r) {
      s.res = r;
      r->n_npus = s.n;
      r->ndims = topo->ndims;
      r->npu = etsim_calloc(s.n, sizeof *r->npu);
      rc = r->npu ? run_once(&s, r) : ETSIM_ENOMEM;
    }
    if (rc == 1) {
      /* The reduced run is not provably exact: simulate every NPU. */
      snprintf(why, sizeof why, "classes of %llu NPUs (%.60s) were tried: %.130s",
               (unsigned long long)sym.order, sym.desc, s.tie_why);
      free_sim(&s);
      etsim_sim_result_free(r);
      etsim_sim__sym_free(&sym);
      have_sym = 0;
      if (err) memset(err, 0, sizeof *err);
      continue;
    }
    if (!rc) {
      r->representative = s.sym != NULL;
      if (s.sym) snprintf(r->reduction, sizeof r->reduction, "%s", sym.desc);
      else snprintf(r->reduction_why, sizeof r->reduction_why, "%s", why);
    }
    free_sim(&s);
    if (have_sym) etsim_sim__sym_free(&sym);
    if (rc) {
      if (rc == ETSIM_ENOMEM && err && !err->code)
        etsim_error_set(err, rc, "simulation: out of memory");
      etsim_sim_result_free(r);
      return rc;
    }
    etsim_stopwatch_stop(&sw);
    r->wall_s = sw.wall_s;
    r->cpu_s = sw.cpu_s;
    *out = r;
    (void)attempt;
    return 0;
  }
}

/* A what-if's second run (opts o, changed by the caller): it records
 * nothing, and its CPU and wall time go to r's, since the summary's cost
 * is the whole call's.  *total_ps gets its iteration time. */
static int rerun_quiet(const etsim_et_set_t *set, const etsim_topo_t *topo,
                       const etsim_sys_config_t *sys, etsim_sim_opts_t *o, const sim_jobs_t *jobs,
                       etsim_sim_result_t *r, int64_t *total_ps, etsim_error_t *err) {
  o->record_nodes = 0;
  o->link_stats = 0;
  o->progress = NULL;
  etsim_sim_result_t *r2 = NULL;
  int rc = run_all(set, topo, sys, o, jobs, &r2, err);
  if (rc) return rc;
  *total_ps = r2->total_ps;
  r->cpu_s += r2->cpu_s;
  r->wall_s += r2->wall_s;
  etsim_sim_result_free(r2);
  return 0;
}

/* What-if: the straggler's price.  The slowest NPU is the one with the
 * lowest speed (lowest id on ties); when it is below 1, the run is repeated with it at speed 1
 * and everything else unchanged, and the difference in iteration time is
 * what it costs.  Nothing is recorded in the second run. */
static int price_straggler(const etsim_et_set_t *set, const etsim_topo_t *topo,
                           const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                           const sim_jobs_t *jobs, etsim_sim_result_t *r, etsim_error_t *err) {
  const double *sp = opts->npu_speed;
  uint32_t n = topo->total, slow = 0;
  for (uint32_t i = 1; i < n; i++)
    if (sp[i] < sp[slow]) slow = i;
  if (sp[slow] >= 1.0) return 0; /* nobody below nominal: nothing to price */
  double *nominal = etsim_malloc(n * sizeof *nominal);
  if (!nominal) return etsim_error_set(err, ETSIM_ENOMEM, "simulation: out of memory");
  memcpy(nominal, sp, n * sizeof *nominal);
  nominal[slow] = 1.0;
  etsim_sim_opts_t o2 = *opts;
  o2.npu_speed = nominal;
  int64_t nominal_ps;
  int rc = rerun_quiet(set, topo, sys, &o2, jobs, r, &nominal_ps, err);
  etsim_free(nominal);
  if (rc) return rc;
  r->straggler = 1;
  r->straggler_npu = slow;
  r->straggler_speed = sp[slow];
  r->straggler_nominal_ps = nominal_ps;
  r->straggler_cost_ps = r->total_ps - nominal_ps;
  return 0;
}

/* Failed cables on the flow and packet backends (or an NPU failure there,
 * which fails its cables) in a run that finished: the same run without
 * any failure, for the slowdown (r->fail_*).  The second run writes no
 * files. */
static int price_failure(const etsim_et_set_t *set, const etsim_topo_t *topo,
                         const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                         const sim_jobs_t *jobs, etsim_sim_result_t *r, etsim_error_t *err) {
  const etsim_net_opts_t *no = opts->net;
  size_t down = 0;
  for (size_t k = 0; no && k < no->n_link_whatif; k++) down += no->link_whatif[k].down != 0;
  if (!down) return 0;
  etsim_net_link_whatif_t *lw = etsim_malloc((no->n_link_whatif + 1) * sizeof *lw);
  if (!lw) return etsim_error_set(err, ETSIM_ENOMEM, "simulation: out of memory");
  size_t k2 = 0;
  for (size_t k = 0; k < no->n_link_whatif; k++)
    if (!no->link_whatif[k].down) lw[k2++] = no->link_whatif[k];
  etsim_net_opts_t n2 = *no;
  n2.link_whatif = lw;
  n2.n_link_whatif = k2;
  n2.fct_file = n2.pfc_file = n2.timeline_file = NULL;
  etsim_sim_opts_t o2 = *opts;
  o2.net = &n2;
  o2.fail_set = 0;
  int rc = rerun_quiet(set, topo, sys, &o2, jobs, r, &r->fail_nominal_ps, err);
  etsim_free(lw);
  if (rc) return rc;
  r->fail_priced = 1;
  return 0;
}

/* etsim_sim_run, and etsim_sim_run_jobs with jobs non-NULL (set is then
 * the jobs' view). */
static int run_checked(const etsim_et_set_t *set, const etsim_topo_t *topo,
                       const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                       const sim_jobs_t *jobs, etsim_sim_result_t **out, etsim_error_t *err) {
  if (!(opts->compute_scale >= 0 && opts->compute_scale <= 1e3) ||
      !(opts->comm_scale >= 0 && opts->comm_scale <= 1e3))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "simulation: compute_scale %g / comm_scale %g outside [0, 1000]",
                           opts->compute_scale, opts->comm_scale);
  for (uint32_t i = 0; opts->npu_speed && i < topo->total; i++)
    if (!(opts->npu_speed[i] >= 1e-3 && opts->npu_speed[i] <= 1e3))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "simulation: NPU %u's speed %g outside [0.001, 1000]", i,
                             opts->npu_speed[i]);
  if (opts->fail_set && opts->fail_npu >= topo->total)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "simulation: failing NPU %u is outside the %u-NPU network",
                           opts->fail_npu, topo->total);
  etsim_sim_result_t *r = NULL;
  int rc = run_all(set, topo, sys, opts, jobs, &r, err);
  if (rc) return rc;
  if (r->failed) {
    *out = r;
    return 0;
  }
  for (uint32_t i = 1; i < r->n_npus; i++)
    if (r->npu[i].finish_ps > r->npu[r->last_npu].finish_ps) r->last_npu = i;
  if ((opts->npu_speed && (rc = price_straggler(set, topo, sys, opts, jobs, r, err))) ||
      (rc = price_failure(set, topo, sys, opts, jobs, r, err))) {
    etsim_sim_result_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

int etsim_sim_run(const etsim_et_set_t *set, const etsim_topo_t *topo,
                  const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                  etsim_sim_result_t **out, etsim_error_t *err) {
  static const etsim_sim_opts_t dflt = {0};
  return run_checked(set, topo, sys, opts ? opts : &dflt, NULL, out, err);
}

/* Per job: its NPUs, iteration and bytes, from a finished run. */
static int job_results(const sim_jobs_t *jm, etsim_sim_result_t *r) {
  uint32_t n = r->n_npus ? r->n_npus : 1;
  r->jobs = etsim_calloc(jm->n_jobs, sizeof *r->jobs);
  r->npu_job = etsim_malloc(n * sizeof *r->npu_job);
  r->npu_rank = etsim_malloc(n * sizeof *r->npu_rank);
  if (!r->jobs || !r->npu_job || !r->npu_rank) return ETSIM_ENOMEM;
  r->n_jobs = jm->n_jobs;
  memcpy(r->npu_job, jm->job_of, r->n_npus * sizeof *r->npu_job);
  memcpy(r->npu_rank, jm->rank_of, r->n_npus * sizeof *r->npu_rank);
  for (uint32_t k = 0; k < jm->n_jobs; k++) {
    const etsim_sim_job_t *jb = &jm->jobs[k];
    struct etsim_sim_job_result *o = &r->jobs[k];
    snprintf(o->name, sizeof o->name, "%s", jb->name ? jb->name : "");
    o->n_npus = (uint32_t)jb->set->n_ranks;
    o->npus = etsim_malloc(o->n_npus * sizeof *o->npus);
    if (!o->npus) return ETSIM_ENOMEM;
    memcpy(o->npus, jb->npus, o->n_npus * sizeof *o->npus);
    o->alone_ps = -1;
    o->finish_ps = -1;
    for (uint32_t x = 0; x < o->n_npus; x++) {
      uint32_t g = jb->npus[x];
      const etsim_sim_npu_t *p = &r->npu[g];
      /* the last to finish, lowest NPU id on ties */
      if (p->finish_ps > o->finish_ps || (p->finish_ps == o->finish_ps && g < o->last_npu)) {
        o->finish_ps = p->finish_ps;
        o->last_npu = g;
      }
      o->comm_bytes += p->comm_bytes;
    }
  }
  return 0;
}

int etsim_sim_run_jobs(const etsim_sim_job_t *jobs, uint32_t n_jobs, const etsim_topo_t *topo,
                       const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                       etsim_sim_result_t **out, etsim_error_t *err) {
  static const etsim_sim_opts_t dflt = {0};
  if (!opts) opts = &dflt;
  if (!n_jobs) return etsim_error_set(err, ETSIM_EINVAL, "several jobs: no job given");
  if (opts->groups)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "several jobs: communicator groups belong to each job, not the run");
  for (int t = 0; t < ETSIM_COP_N; t++)
    if (sys->custom[t])
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "several jobs: custom %s collectives are not supported with --job "
                             "(their rank traces are the network's, not a job's)",
                             etsim_coll_op_name(t));
  sim_jobs_t jm;
  int rc = etsim_sim__jobs_build(jobs, n_jobs, topo->total, &jm, err);
  if (rc) return rc;
  etsim_sim_opts_t o = *opts;
  o.groups = jm.all.n ? &jm.all : NULL;
  o.exact = 1;
  etsim_sim_result_t *r = NULL;
  rc = run_checked(&jm.view, topo, sys, &o, &jm, &r, err);
  if (!rc && !r->failed && (rc = job_results(&jm, r)))
    etsim_error_set(err, rc, "several jobs: out of memory");
  const char *be = opts->backend ? opts->backend : "analytical";
  if (!rc && r->n_jobs)
    r->jobs_share_links = strcmp(be, "analytical") != 0 && strcmp(be, "congestion-unaware") != 0;
  /* Each job alone on its placement: its slowdown from sharing the links */
  for (uint32_t k = 0; !rc && r->n_jobs > 1 && r->jobs_share_links && opts->job_alone && k < n_jobs;
       k++) {
    etsim_sim_opts_t o1 = *opts;
    o1.record_nodes = 0;
    o1.link_stats = 0;
    o1.progress = NULL;
    o1.job_alone = 0;
    o1.npu_speed = opts->npu_speed;
    etsim_sim_result_t *r1 = NULL;
    if ((rc = etsim_sim_run_jobs(&jobs[k], 1, topo, sys, &o1, &r1, err))) break;
    r->jobs[k].alone_ps = r1->failed ? -1 : r1->jobs ? r1->jobs[0].finish_ps : -1;
    r->cpu_s += r1->cpu_s;
    r->wall_s += r1->wall_s;
    etsim_sim_result_free(r1);
  }
  etsim_sim__jobs_free(&jm);
  if (rc) {
    etsim_sim_result_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void etsim_sim_result_free(etsim_sim_result_t *r) {
  if (!r) return;
  for (uint32_t k = 0; r->jobs && k < r->n_jobs; k++) etsim_free(r->jobs[k].npus);
  etsim_free(r->jobs);
  etsim_free(r->npu_job);
  etsim_free(r->npu_rank);
  etsim_net_links_free(&r->links);
  etsim_free(r->mem);
  etsim_free(r->npu);
  etsim_free(r->recs);
  etsim_free(r);
}

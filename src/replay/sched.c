/*
 * sched.c — issue a plan in dependency order, and the virtual-clock dry run.
 *
 * The scheduler keeps a dependency counter per op and two FIFO queues of
 * ready ops: communication (started as soon as ready, completing later) and
 * compute (run one at a time on the host lane).  Each op enters a queue
 * once per run, so the queues are plain arrays filled front to back and the
 * run allocates nothing.  What "start", "run" and "poll" mean is up to the
 * executor: MPI calls and kernels in etsim-replay, a clock here.
 */
#include "etsim/replay.h"

#include <string.h>

int etsim_replay_sched_init(etsim_replay_sched_t *s, const etsim_replay_plan_t *p) {
  memset(s, 0, sizeof *s);
  size_t n = p->n_ops ? p->n_ops : 1;
  s->plan = p;
  s->pending = etsim_calloc(n, sizeof *s->pending);
  s->compute_q = etsim_calloc(n, sizeof *s->compute_q);
  s->comm_q = etsim_calloc(n, sizeof *s->comm_q);
  s->done_buf = etsim_calloc(n, sizeof *s->done_buf);
  s->when_buf = etsim_calloc(n, sizeof *s->when_buf);
  s->start_ns = etsim_calloc(n, sizeof *s->start_ns);
  s->end_ns = etsim_calloc(n, sizeof *s->end_ns);
  s->order = etsim_calloc(n, sizeof *s->order);
  if (!s->pending || !s->compute_q || !s->comm_q || !s->done_buf || !s->when_buf || !s->start_ns ||
      !s->end_ns || !s->order) {
    etsim_replay_sched_free(s);
    return ETSIM_ENOMEM;
  }
  return 0;
}

void etsim_replay_sched_free(etsim_replay_sched_t *s) {
  etsim_free(s->pending);
  etsim_free(s->compute_q);
  etsim_free(s->comm_q);
  etsim_free(s->done_buf);
  etsim_free(s->when_buf);
  etsim_free(s->start_ns);
  etsim_free(s->end_ns);
  etsim_free(s->order);
  memset(s, 0, sizeof *s);
}

typedef struct {
  etsim_replay_sched_t *s;
  size_t ch, ct, mh, mt, ndone;
} state_t;

static void complete(state_t *st, uint32_t u, int64_t t) {
  etsim_replay_sched_t *s = st->s;
  const etsim_replay_plan_t *p = s->plan;
  /* An op completes once per run, after it started. */
  ETSIM_ASSERT(st->ndone < p->n_ops && s->end_ns[u] < 0 && s->start_ns[u] >= 0);
  s->end_ns[u] = t;
  s->order[st->ndone++] = u;
  for (uint32_t q = p->chd_off[u]; q < p->chd_off[u + 1]; q++) {
    uint32_t c = p->chd[q];
    ETSIM_ASSERT(s->pending[c] > 0); /* each edge is counted down once */
    if (--s->pending[c] == 0) {
      if (etsim_replay_kind_is_comm(p->ops[c].kind)) s->comm_q[st->mt++] = c;
      else s->compute_q[st->ct++] = c;
    }
  }
}

int etsim_replay_sched_run(etsim_replay_sched_t *s, const etsim_replay_exec_t *x,
                           int64_t *makespan_ns, etsim_error_t *err) {
  const etsim_replay_plan_t *p = s->plan;
  size_t n = p->n_ops;
  state_t st = {s, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    s->pending[i] = p->par_off[i + 1] - p->par_off[i];
    s->start_ns[i] = s->end_ns[i] = -1;
    if (!s->pending[i]) {
      if (etsim_replay_kind_is_comm(p->ops[i].kind)) s->comm_q[st.mt++] = (uint32_t)i;
      else s->compute_q[st.ct++] = (uint32_t)i;
    }
  }
  size_t outstanding = 0;
  int rc = 0;
  int64_t t0 = x->now_ns(x->user), last = 0;
  while (st.ndone < n) {
    while (st.mh < st.mt) {
      uint32_t u = s->comm_q[st.mh++];
      s->start_ns[u] = x->now_ns(x->user) - t0;
      if ((rc = x->start(x->user, u, err))) return rc;
      outstanding++;
    }
    if (outstanding) {
      int k = x->poll(x->user, 0, s->done_buf, s->when_buf, n, err);
      if (k < 0) return k;
      if (k) {
        for (int j = 0; j < k; j++) {
          int64_t w = s->when_buf[j] - t0;
          if (w > last) last = w;
          complete(&st, (uint32_t)s->done_buf[j], w);
        }
        outstanding -= (size_t)k;
        continue; /* start what became ready before computing */
      }
    }
    if (st.ch < st.ct) {
      uint32_t u = s->compute_q[st.ch++];
      int64_t t = x->now_ns(x->user) - t0;
      s->start_ns[u] = t;
      if (p->ops[u].kind != ETSIM_REPLAY_NOP) {
        if ((rc = x->run(x->user, u, err))) return rc;
        t = x->now_ns(x->user) - t0;
      }
      if (t > last) last = t;
      complete(&st, u, t);
      continue;
    }
    if (st.mh < st.mt) continue;
    if (!outstanding) break;
    int k = x->poll(x->user, 1, s->done_buf, s->when_buf, n, err);
    if (k < 0) return k;
    for (int j = 0; j < k; j++) {
      int64_t w = s->when_buf[j] - t0;
      if (w > last) last = w;
      complete(&st, (uint32_t)s->done_buf[j], w);
    }
    outstanding -= (size_t)k;
  }
  if (st.ndone < n) {
    size_t i;
    for (i = 0; i < n && s->end_ns[i] >= 0; i++)
      ;
    return etsim_error_set(err, ETSIM_EDEADLOCK, "%s: node %llu (%s): never became ready",
                           p->trace ? p->trace->path : "plan", (unsigned long long)p->ops[i].id,
                           p->ops[i].name);
  }
  *makespan_ns = last;
  return 0;
}

/* ------------------------------------------------------------ dry run */

/* A communication op in flight on the virtual clock: it finishes at `fin`;
 * ops that finish together complete in the order they started (seq). */
typedef struct vdone {
  int64_t fin;
  uint64_t seq;
  uint32_t op;
} vdone_t;

static inline int vdone_less(const vdone_t *a, const vdone_t *b) {
  return a->fin < b->fin || (a->fin == b->fin && a->seq < b->seq);
}

ETSIM_HEAP_DEFINE(vheap, vdone_t, vdone_less)

typedef struct {
  const etsim_replay_plan_t *plan;
  int64_t now;
  vheap_t inflight; /* room for every op, reserved before the run */
  uint64_t next_seq;
} vclock_t;

static int64_t v_now(void *u) { return ((vclock_t *)u)->now; }

static int v_run(void *u, size_t op, etsim_error_t *err) {
  (void)err;
  vclock_t *v = u;
  v->now += v->plan->ops[op].rec_ns;
  return 0;
}

static int v_start(void *u, size_t op, etsim_error_t *err) {
  vclock_t *v = u;
  vdone_t d = {v->now + v->plan->ops[op].rec_ns, v->next_seq++, (uint32_t)op};
  /* Each op starts once per run and the room was reserved: no allocation. */
  ETSIM_ASSERT(v->inflight.n < v->inflight.cap);
  if (vheap_push(&v->inflight, &d))
    return etsim_error_set(err, ETSIM_ENOMEM, "dry run: out of memory");
  return 0;
}

static int v_poll(void *u, int block, size_t *done, int64_t *when, size_t max, etsim_error_t *err) {
  (void)err;
  vclock_t *v = u;
  vheap_t *h = &v->inflight;
  if (block && h->n && h->v[0].fin > v->now) v->now = h->v[0].fin;
  size_t k = 0;
  while (h->n && h->v[0].fin <= v->now && k < max) {
    vdone_t d;
    vheap_pop(h, &d);
    when[k] = d.fin;
    done[k++] = d.op;
  }
  return (int)k;
}

int etsim_replay_dry_run(etsim_replay_sched_t *s, int64_t *makespan_ns, etsim_error_t *err) {
  vclock_t v;
  memset(&v, 0, sizeof v);
  v.plan = s->plan;
  int rc;
  if (vheap_reserve(&v.inflight, s->plan->n_ops ? s->plan->n_ops : 1)) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "dry run: out of memory");
  } else {
    etsim_replay_exec_t x = {&v, v_now, v_run, v_start, v_poll};
    rc = etsim_replay_sched_run(s, &x, makespan_ns, err);
  }
  vheap_free(&v.inflight);
  return rc;
}

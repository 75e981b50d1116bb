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
  s->end_ns[u] = t;
  s->order[st->ndone++] = u;
  for (uint32_t q = p->chd_off[u]; q < p->chd_off[u + 1]; q++) {
    uint32_t c = p->chd[q];
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

typedef struct {
  const etsim_replay_plan_t *plan;
  int64_t now;
  size_t n; /* heap entries */
  int64_t *fin;
  uint64_t *seq;
  uint32_t *op;
  uint64_t next_seq;
} vclock_t;

static int64_t v_now(void *u) { return ((vclock_t *)u)->now; }

static int v_run(void *u, size_t op, etsim_error_t *err) {
  (void)err;
  vclock_t *v = u;
  v->now += v->plan->ops[op].rec_ns;
  return 0;
}

static int heap_less(const vclock_t *v, size_t a, size_t b) {
  return v->fin[a] < v->fin[b] || (v->fin[a] == v->fin[b] && v->seq[a] < v->seq[b]);
}

static void heap_swap(vclock_t *v, size_t a, size_t b) {
  int64_t f = v->fin[a];
  v->fin[a] = v->fin[b], v->fin[b] = f;
  uint64_t s = v->seq[a];
  v->seq[a] = v->seq[b], v->seq[b] = s;
  uint32_t o = v->op[a];
  v->op[a] = v->op[b], v->op[b] = o;
}

static int v_start(void *u, size_t op, etsim_error_t *err) {
  (void)err;
  vclock_t *v = u;
  size_t i = v->n++;
  v->fin[i] = v->now + v->plan->ops[op].rec_ns;
  v->seq[i] = v->next_seq++;
  v->op[i] = (uint32_t)op;
  while (i && heap_less(v, i, (i - 1) / 2)) {
    heap_swap(v, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
  return 0;
}

static uint32_t heap_pop(vclock_t *v) {
  uint32_t top = v->op[0];
  v->n--;
  if (v->n) {
    v->fin[0] = v->fin[v->n], v->seq[0] = v->seq[v->n], v->op[0] = v->op[v->n];
    size_t i = 0;
    for (;;) {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < v->n && heap_less(v, l, m)) m = l;
      if (r < v->n && heap_less(v, r, m)) m = r;
      if (m == i) break;
      heap_swap(v, i, m);
      i = m;
    }
  }
  return top;
}

static int v_poll(void *u, int block, size_t *done, int64_t *when, size_t max, etsim_error_t *err) {
  (void)err;
  vclock_t *v = u;
  if (block && v->n && v->fin[0] > v->now) v->now = v->fin[0];
  size_t k = 0;
  while (v->n && v->fin[0] <= v->now && k < max) {
    when[k] = v->fin[0];
    done[k++] = heap_pop(v);
  }
  return (int)k;
}

int etsim_replay_dry_run(etsim_replay_sched_t *s, int64_t *makespan_ns, etsim_error_t *err) {
  size_t n = s->plan->n_ops ? s->plan->n_ops : 1;
  vclock_t v;
  memset(&v, 0, sizeof v);
  v.plan = s->plan;
  v.fin = etsim_calloc(n, sizeof *v.fin);
  v.seq = etsim_calloc(n, sizeof *v.seq);
  v.op = etsim_calloc(n, sizeof *v.op);
  int rc;
  if (!v.fin || !v.seq || !v.op) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "dry run: out of memory");
  } else {
    etsim_replay_exec_t x = {&v, v_now, v_run, v_start, v_poll};
    rc = etsim_replay_sched_run(s, &x, makespan_ns, err);
  }
  etsim_free(v.fin);
  etsim_free(v.seq);
  etsim_free(v.op);
  return rc;
}

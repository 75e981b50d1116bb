/* The system layer engine: streams, dimension queues, ring-family
 * algorithms, and point-to-point matching.
 *
 * Semantics follow ASTRA-sim 2.0 (astra-sim/system at 518bd51): they were
 * read there and re-expressed here; see docs/sim.md for the model in words.
 *
 * One algorithm state machine covers ring and direct: a stream holds
 * "packets" (pending sends) and "free packets" (sends whose memory-bus
 * delay has passed).  Starting a phase inserts `parallel_reduce` packets;
 * every receive inserts one more; a packet becomes free after the endpoint
 * delay (plus three local-memory passes when it carries data to reduce);
 * a free packet is sent at once while the phase still has sends left; the
 * phase ends when no sends are left and all packets are free again.
 * Ring sends to its neighbour; direct rotates through all peers with a
 * window of outstanding sends.
 */
#include "coll_int.h"
#include "ext_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TOK_STREAM (1ull << 62)
#define TOK_USER (2ull << 62)
#define TOK_CUSTOM (3ull << 62) /* stream << 32 | node of a custom collective */
#define TOK_KIND(t) ((t) & (3ull << 62))
#define TOK_VAL(t) ((t) & ~(3ull << 62))
#define TAG_COLL (1ull << 40)
#define TAG_GROUP_SHIFT 41 /* stream_tag: a communicator's id, bits 41-62 */
#define CP(s) (&(s)->cur)

static const char *const type_names[] = {"all-reduce", "reduce-scatter", "all-gather",
                                         "all-to-all", "broadcast",      "reduce",
                                         "gather",     "scatter",        "barrier"};
const char *etsim_coll_op_name(etsim_cop_t t) {
  return (unsigned)t < ETSIM_COP_N ? type_names[t] : "?";
}

/* ------------------------------------------------------------------ pools */

#define POOL_ALLOC(c, arr, n, cap, freehead, out)                                          \
  do {                                                                                     \
    if ((c)->freehead != NIL) {                                                            \
      *(out) = (c)->freehead;                                                              \
      (c)->freehead = (c)->arr[*(out)].next_free;                                          \
    } else {                                                                               \
      if ((c)->n == (c)->cap) {                                                            \
        int rc_ = etsim_grow((void **)&(c)->arr, &(c)->cap, (c)->n + 1, sizeof *(c)->arr); \
        if (rc_) return rc_;                                                               \
      }                                                                                    \
      *(out) = (uint32_t)(c)->n++;                                                         \
    }                                                                                      \
  } while (0)

/* --------------------------------------------------------------- matching */

#define TOKEN_FAST (1ull << 63) /* a network token that is a match entry index */

static uint32_t match_hash(uint64_t tag, uint32_t src, uint32_t dst, uint64_t bytes) {
  uint64_t h = etsim_hash_u64(tag ^ 0x9e3779b97f4a7c15ull);
  h = etsim_hash_u64(h ^ ((uint64_t)src << 32 | dst));
  return (uint32_t)etsim_hash_u64(h ^ bytes);
}

static int mslot_grow(etsim_coll_t *c) {
  size_t cap = c->mslot_cap ? c->mslot_cap * 2 : 1024;
  uint64_t *sl = etsim_calloc(cap, sizeof *sl);
  if (!sl) return ETSIM_ENOMEM;
  for (size_t i = 0; i < c->mslot_cap; i++) {
    uint64_t v = c->mslot[i];
    if (!v) continue;
    size_t j = (size_t)(v >> 32) & (cap - 1);
    while (sl[j]) j = (j + 1) & (cap - 1);
    sl[j] = v;
  }
  etsim_free(c->mslot);
  c->mslot = sl;
  c->mslot_cap = cap;
  return 0;
}

static inline uint32_t mbox_way(uint64_t tag, uint32_t src) {
  return (uint32_t)((((tag ^ (uint64_t)src << 40) * 0x9e3779b97f4a7c15ull) >> 32) % MBOX_WAYS);
}

/* Find or create the entry for the key; *out is its index.  The
 * receiver's mailbox way first (a collective stream's key nearly always
 * lives there), the hash table only when dst has keys there. */
static int match_get(etsim_coll_t *c, uint64_t tag, uint32_t src, uint32_t dst, uint64_t bytes,
                     uint32_t *out) {
  mbox_t *mb = &c->mbox[dst];
  uint32_t w = mbox_way(tag, src), v = mb->way[w];
  if (v) {
    const match_t *e = &c->match[v - 1];
    if (e->tag == tag && e->src == src && e->bytes == bytes) {
      *out = v - 1;
      return 0;
    }
    if ((c->match_used + 1) * 2 > c->mslot_cap) { /* the key may go to the table */
      int rc = mslot_grow(c);
      if (rc) return rc;
    }
  }
  uint32_t h = 0;
  size_t j = 0, mask = c->mslot_cap ? c->mslot_cap - 1 : 0;
  if (mb->n_over) {
    h = match_hash(tag, src, dst, bytes);
    for (j = h & mask;; j = (j + 1) & mask) {
      uint64_t sv = c->mslot[j];
      if (!sv) break; /* j: where a new key goes */
      if ((uint32_t)(sv >> 32) != h) continue;
      const match_t *e = &c->match[(uint32_t)sv - 1];
      if (e->tag == tag && e->src == src && e->dst == dst && e->bytes == bytes) {
        *out = (uint32_t)sv - 1;
        return 0;
      }
    }
  } else if (v) {
    h = match_hash(tag, src, dst, bytes);
    for (j = h & mask; c->mslot[j]; j = (j + 1) & mask) {}
  }
  uint32_t k;
  if (c->n_free) {
    k = c->free_stack[--c->n_free];
  } else {
    if (c->n_match == c->cap_match &&
        etsim_grow((void **)&c->match, &c->cap_match, c->n_match + 1, sizeof *c->match))
      return ETSIM_ENOMEM;
    if (c->cap_free < c->cap_match) { /* every entry may be free at once */
      uint32_t *fs = etsim_realloc(c->free_stack, c->cap_match * sizeof *fs);
      if (!fs) return ETSIM_ENOMEM;
      c->free_stack = fs;
      c->cap_free = c->cap_match;
    }
    k = (uint32_t)c->n_match++;
  }
  c->match[k] =
      (match_t){.tag = tag, .bytes = bytes, .src = src, .dst = dst, .head = NIL, .tail = NIL};
  mb = &c->mbox[dst];
  if (!v) {
    mb->way[w] = k + 1;
    c->match[k].in_mbox = 1;
  } else {
    c->mslot[j] = (uint64_t)h << 32 | (k + 1);
    c->match_used++;
    mb->n_over++;
  }
  *out = k;
  return 0;
}

/* Free entry k when nothing waits on it: its slot leaves the table by
 * backward shifting (no tombstones), the entry goes to the free list. */
static void match_release(etsim_coll_t *c, uint32_t k) {
  match_t *e = &c->match[k];
  if (e->arrived || e->n_recv || e->inflight) return;
  if (e->in_mbox) {
    c->mbox[e->dst].way[mbox_way(e->tag, e->src)] = 0;
    goto freed_entry;
  }
  c->mbox[e->dst].n_over--;
  size_t mask = c->mslot_cap - 1;
  size_t j = match_hash(e->tag, e->src, e->dst, e->bytes) & mask;
  while ((uint32_t)c->mslot[j] != k + 1) j = (j + 1) & mask;
  for (;;) {
    c->mslot[j] = 0;
    size_t i = j;
    for (;;) {
      i = (i + 1) & mask;
      uint64_t v = c->mslot[i];
      if (!v) goto freed;
      size_t home = (size_t)(v >> 32) & mask;
      /* v may fill the hole at j unless its home lies cyclically in (j, i]. */
      if (j <= i ? (home <= j || home > i) : (home <= j && home > i)) break;
    }
    c->mslot[j] = c->mslot[i];
    j = i;
  }
freed:
  c->match_used--;
freed_entry:
  e->inflight = UINT32_MAX;
  /* room for every entry was reserved when the pool grew (match_reserve) */
  c->free_stack[c->n_free++] = k;
}

/* ---------------------------------------------------------------- helpers */

static uint32_t ring_id(const ringmap_t *r, uint32_t pos) {
  return r->members ? r->members[pos] : r->base + pos * r->stride;
}

static uint32_t ring_offset(const ringmap_t *r, int64_t k) {
  int64_t n = r->n;
  int64_t p = ((int64_t)r->pos + k) % n;
  if (p < 0) p += n;
  return ring_id(r, (uint32_t)p);
}

static int64_t reduce_ns(etsim_coll_t *c, uint64_t bytes) {
  if (c->cfg.local_mem_bw_gbps <= 0) return 0;
  if ((int64_t)bytes == c->reduce_ns_cache_bytes) return c->reduce_ns_cache;
  /* One write and two reads of the message, each truncated to whole ns
   * (ASTRA-sim's PacketBundle); local-mem-bw is in 10^9 bytes/s. */
  double one = (double)bytes / (c->cfg.local_mem_bw_gbps * 1e9) * 1e9;
  /* Saturated at the horizon: the event is then refused (ETSIM_ERANGE). */
  int64_t d = etsim_des_ns_ok(3 * one) ? 3 * (int64_t)one : ETSIM_DES_HORIZON_NS;
  c->reduce_ns_cache_bytes = (int64_t)bytes;
  c->reduce_ns_cache = d;
  return d;
}

static int post_send(etsim_coll_t *c, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t tag,
                     uint64_t send_token);
static int post_recv(etsim_coll_t *c, uint32_t dst, uint32_t src, uint64_t bytes, uint64_t tag,
                     uint64_t recv_token);
static int proceed(etsim_coll_t *c, uint32_t si);
static int custom_done(etsim_coll_t *c, uint64_t tok);
static int custom_start(etsim_coll_t *c, uint32_t si);

/* ------------------------------------------------------ algorithm machine */

static int insert_packet(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  phase_t *p = CP(s);
  if (s->zero_lat == 0 && s->nonzero_lat == 0) {
    s->zero_lat = s->parallel_reduce;
    s->nonzero_lat = s->nonzero_per_round;
    s->toggle = !s->toggle;
  }
  int processed = 0;
  if (s->zero_lat > 0) {
    s->zero_lat--;
  } else if (s->nonzero_lat > 0) {
    processed =
        p->type == ETSIM_COP_REDUCE_SCATTER || (p->type == ETSIM_COP_ALL_REDUCE && s->toggle);
    s->nonzero_lat--;
  } else {
    return ETSIM_EINTERNAL;
  }
  uint64_t bytes = s->msg;
  if (s->hd) {
    /* The packet goes to the partner at distance hd_off: forward when this
     * NPU's block index is even, backward when odd; then the distance
     * doubles and the size halves (all-reduce turns back at n). */
    if (s->packets >= 4) return ETSIM_EINTERNAL;
    int32_t off = s->hd_off;
    int dir = off == 0 || (p->ring.pos / (uint32_t)off) % 2 == 0 ? 1 : -1;
    uint32_t slot = (uint32_t)(s->pk_head + s->packets) % 4;
    s->pk_peer[slot] = ring_offset(&p->ring, (int64_t)dir * off);
    s->pk_size[slot] = bytes = s->hd_msg;
    if (s->hd_double) {
      s->hd_off *= 2;
      s->hd_msg /= 2;
      if ((uint32_t)s->hd_off == p->ring.n && p->type == ETSIM_COP_ALL_REDUCE) {
        s->hd_double = 0;
        s->hd_off /= 2;
        s->hd_msg *= 2;
      }
    } else {
      s->hd_off /= 2;
      s->hd_msg *= 2;
    }
  }
  s->packets++;
  int64_t delay = etsim_coll__eps(c, p);
  if (processed) delay += reduce_ns(c, bytes);
  return etsim_des_push(c->q, etsim_des_at_ns(c->q, delay), ETSIM_COLL_EV_GENERAL, 0, si);
}

/* A ring stream under --ring-window tracks its undelivered pieces. */
static int windowed(const etsim_coll_t *c, const stream_t *s) {
  return c->cfg.ring_window && !s->direct && !s->hd && !s->dbt;
}

static int ready(etsim_coll_t *c, uint32_t si, int *sent) {
  stream_t *s = &c->streams[si];
  *sent = 0;
  if (s->packets == 0 || s->stream_count == 0 || s->free_packets == 0) return 0;
  int win = windowed(c, s);
  if (win && s->inflight >= c->cfg.ring_window) return 0; /* resumed by a delivery */
  phase_t *p = CP(s);
  uint32_t dst, src;
  uint64_t msg = s->msg;
  if (s->hd) {
    dst = src = s->pk_peer[s->pk_head];
    msg = s->pk_size[s->pk_head];
    s->pk_head = (uint8_t)((s->pk_head + 1) % 4);
  } else {
    int64_t k = s->direct ? 1 + (int64_t)(s->n_sent % (p->ring.n - 1)) : 1;
    dst = ring_offset(&p->ring, p->dir * k);
    src = ring_offset(&p->ring, -p->dir * k);
  }
  s->n_sent++;
  s->stream_count--;
  s->packets--;
  s->free_packets--;
  uint32_t npu = s->npu;
  uint64_t tag = s->tag;
  if (win) s->inflight++;
  int rc = post_send(c, npu, dst, msg, tag, win ? TOK_STREAM | si : 0);
  if (!rc) rc = post_recv(c, npu, src, msg, tag, TOK_STREAM | si);
  *sent = 1;
  return rc;
}

static int iteratable(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  if (s->stream_count == 0 && s->free_packets == s->parallel_reduce && s->inflight == 0)
    return proceed(c, si);
  return 0;
}

static int dbt_run(etsim_coll_t *c, uint32_t si, int ev);

static int on_general(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  if (etsim_coll__ext_phase(CP(s))) return etsim_coll__ext_general(c, si);
  if (s->dbt) return dbt_run(c, si, 1);
  s->free_packets++;
  int sent, rc;
  if (s->direct && CP(s)->type == ETSIM_COP_ALL_REDUCE && s->stream_count <= s->middle_point) {
    if (s->total_received < s->middle_point) return 0;
    int n = s->parallel_reduce;
    for (int i = 0; i < n; i++)
      if ((rc = ready(c, si, &sent))) return rc;
  } else if ((rc = ready(c, si, &sent))) {
    return rc;
  }
  return iteratable(c, si);
}

static int on_recv(etsim_coll_t *c, uint32_t si) {
  c->streams[si].total_received++;
  if (etsim_coll__ext_phase(CP(&c->streams[si]))) return etsim_coll__ext_recv(c, si);
  if (c->streams[si].dbt) return dbt_run(c, si, 2);
  return insert_packet(c, si);
}

/* Set the algorithm state for the stream's current phase: its row's start
 * hook (ext.c sets up its own phases when they start). */
static void phase_setup(stream_t *s) {
  phase_t *p = CP(s);
  if (s->cu || etsim_coll__ext_phase(p)) return;
  etsim_coll__algo(p->algo)->setup(s);
}

/* The ring family: ring and direct send to ring neighbours or every peer,
 * halving-doubling to partners at doubling distances. */
void etsim_coll__ring_setup(stream_t *s) {
  phase_t *p = CP(s);
  etsim_algo_kind_t base = etsim_coll__algo(p->algo)->base;
  int64_t n = p->ring.n;
  s->dbt = 0;
  s->direct = base == ETSIM_ALGO_DIRECT;
  s->msg = p->type == ETSIM_COP_ALL_GATHER ? p->size : p->size / (uint64_t)n;
  s->free_packets = 0;
  s->zero_lat = s->nonzero_lat = 0;
  s->toggle = 0;
  s->packets = 0;
  s->n_sent = 0;
  s->total_received = 0;
  s->middle_point = (int32_t)(n - 1);
  s->hd = base == ETSIM_ALGO_HALVING_DOUBLING;
  s->pk_head = 0;
  if (s->hd) {
    int32_t l = (int32_t)log2((double)n);
    s->parallel_reduce = 1;
    s->stream_count = p->type == ETSIM_COP_ALL_REDUCE ? 2 * l : l;
    s->nonzero_per_round = l - 1;
    if (p->type == ETSIM_COP_ALL_GATHER) {
      s->hd_msg = p->size;
      s->hd_off = (int32_t)(n / 2);
      s->hd_double = 0;
    } else {
      s->hd_msg = p->size / 2;
      s->hd_off = 1;
      s->hd_double = 1;
    }
  } else if (!s->direct) {
    s->parallel_reduce = 1;
    s->stream_count = p->type == ETSIM_COP_ALL_REDUCE   ? 2 * (n - 1)
                      : p->type == ETSIM_COP_ALL_TO_ALL ? n * (n - 1) / 2
                                                        : n - 1;
    s->nonzero_per_round = (int32_t)(n - 1);
  } else {
    int32_t w = p->window < 0 || p->window > n - 1 ? (int32_t)(n - 1) : p->window;
    s->parallel_reduce = w < 1 ? 1 : w;
    /* Off a local ring each round has one window of non-zero packets. */
    s->nonzero_per_round = p->fast ? (int32_t)(n - 1) * s->parallel_reduce : s->parallel_reduce;
    s->stream_count = p->type == ETSIM_COP_ALL_REDUCE ? 2 * (n - 1) : n - 1;
  }
}

static int stream_init(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  s->initialized = 1;
  if (s->cu) return custom_start(c, si);
  if (etsim_coll__ext_phase(CP(s))) return etsim_coll__ext_start(c, si);
  if (s->dbt) return dbt_run(c, si, 0);
  int n = s->parallel_reduce;
  for (int i = 0; i < n; i++) {
    int rc = insert_packet(c, si);
    if (rc) return rc;
  }
  return 0;
}

/* ------------------------------------------------------------------ queues */

static size_t qslot(const etsim_coll_t *c, uint32_t npu, int q) {
  return (size_t)npu * (size_t)c->n_queues + (size_t)q;
}

/* Insert by priority: after every started stream and every stream of equal
 * or higher priority (FIFO among equals). */
static void queue_insert(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  size_t q = qslot(c, s->npu, s->cur_queue);
  uint32_t it = c->qhead[q];
  while (it != NIL) {
    stream_t *o = &c->streams[it];
    if (o->initialized || o->priority >= s->priority) {
      it = o->next;
      continue;
    }
    break;
  }
  s->in_queue = 1;
  if (it == NIL) {
    s->prev = c->qtail[q];
    s->next = NIL;
    if (s->prev != NIL) c->streams[s->prev].next = si;
    else c->qhead[q] = si;
    c->qtail[q] = si;
  } else {
    stream_t *o = &c->streams[it];
    s->prev = o->prev;
    s->next = it;
    if (o->prev != NIL) c->streams[o->prev].next = si;
    else c->qhead[q] = si;
    o->prev = si;
  }
}

static void queue_erase(etsim_coll_t *c, uint32_t si, int queue) {
  stream_t *s = &c->streams[si];
  if (!s->in_queue) return;
  size_t q = qslot(c, s->npu, queue);
  if (s->prev != NIL) c->streams[s->prev].next = s->next;
  else c->qhead[q] = s->next;
  if (s->next != NIL) c->streams[s->next].prev = s->prev;
  else c->qtail[q] = s->prev;
  s->in_queue = 0;
  s->prev = s->next = NIL;
}

/* Accumulate per-dimension busy and exposed time of NPU npu up to now. */
static void dim_touch(etsim_coll_t *c, uint32_t npu) {
  int nd = c->topo->ndims;
  int64_t t = c->q->now_ps;
  size_t b = (size_t)npu * (size_t)nd;
  for (int d = 0; d < nd; d++) {
    if (c->dim_run[b + d]) {
      int64_t dt = t - c->dim_last_ps[b + d];
      c->dim_busy_ps[b + d] += dt;
      if (!c->comp_on[npu]) c->dim_exposed_ps[b + d] += dt;
    }
    c->dim_last_ps[b + d] = t;
  }
}

/* A phase starts (+1) or stops (-1) running in queue `queue`: it counts
 * against the queue's limit, and its time against every dimension its
 * messages cross (a communicator's ring may cross several; it used to be
 * charged to the queue's dimension, 0 for every communicator). */
static void run_add(etsim_coll_t *c, uint32_t npu, int queue, int delta, uint32_t dims) {
  dim_touch(c, npu);
  c->qrunning[qslot(c, npu, queue)] += (uint32_t)delta;
  size_t b = (size_t)npu * (size_t)c->topo->ndims;
  for (int d = 0; d < c->topo->ndims; d++)
    if (dims >> d & 1u) c->dim_run[b + (size_t)d] += (uint32_t)delta;
}

void etsim_coll_set_compute(etsim_coll_t *c, uint32_t npu, int active) {
  dim_touch(c, npu);
  c->comp_on[npu] = (uint8_t)(active != 0);
}

void etsim_coll_dim_times(etsim_coll_t *c, uint32_t npu, int64_t *busy_ps, int64_t *exposed_ps) {
  dim_touch(c, npu);
  for (int d = 0; d < c->topo->ndims; d++) {
    busy_ps[d] = c->dim_busy_ps[(size_t)npu * (size_t)c->topo->ndims + (size_t)d];
    exposed_ps[d] = c->dim_exposed_ps[(size_t)npu * (size_t)c->topo->ndims + (size_t)d];
  }
}

/* Start waiting streams of queue q while fewer than the threshold run; the
 * first `running` entries of the list are the running ones. */
static int queue_fill(etsim_coll_t *c, uint32_t npu, int queue) {
  size_t q = qslot(c, npu, queue);
  uint32_t it = c->qhead[q];
  for (uint32_t k = 0; k < c->qrunning[q] && it != NIL; k++) it = c->streams[it].next;
  while (it != NIL && c->qrunning[q] < c->queue_threshold) {
    uint32_t nx = c->streams[it].next;
    run_add(c, npu, queue, 1, c->streams[it].cur.dims);
    int rc = stream_init(c, it);
    if (rc) return rc;
    it = nx;
  }
  return 0;
}

static void dataset_release(etsim_coll_t *c, uint32_t di) {
  c->datasets[di].next_free = c->free_dataset;
  c->free_dataset = di;
  c->live_datasets--;
}

/* The current phase ended (or the stream is new): move to the next phase,
 * or finish the stream. */
static int proceed(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  int prev_q = s->cur_queue;
  uint32_t npu = s->npu, prev_dims = s->cur.dims;
  int rc = 0;
  if (s->next_phase == s->n_phases) {
    uint32_t di = s->dataset;
    dataset_t *d = &c->datasets[di];
    if (++d->finished == d->total) {
      uint64_t token = d->token;
      c->done_dims = d->dims;
      dataset_release(c, di);
      c->done(c->user, npu, token); /* may issue more work: re-fetch */
    }
    s = &c->streams[si];
    if (prev_q >= 0) queue_erase(c, si, prev_q);
    s->next_free = c->free_stream;
    c->free_stream = si;
    c->live_streams--;
    if (prev_q >= 0) {
      run_add(c, npu, prev_q, -1, prev_dims);
      rc = queue_fill(c, npu, prev_q);
    }
    return rc;
  }
  if (prev_q >= 0) queue_erase(c, si, prev_q);
  s->cur = PHASES(c, si)[s->next_phase++];
  s->cur_queue = (int32_t)CP(s)->queue;
  s->initialized = 0;
  phase_setup(s);
  queue_insert(c, si);
  if (prev_q >= 0) {
    run_add(c, npu, prev_q, -1, prev_dims);
    if ((rc = queue_fill(c, npu, prev_q))) return rc;
  }
  return queue_fill(c, npu, c->streams[si].cur_queue);
}

/* ------------------------------------------------------ double binary tree */

/* ASTRA-sim's binary trees over n = 2^m NPUs of a dimension, numbered
 * in order start + k*stride: a root (k = n-1 for the "max" tree, k = 0 for
 * the "min" tree) above a perfect tree of the other n-1 positions.  The two
 * trees alternate chunk by chunk.  Finds k's parent and children. */
static void tree_links(uint32_t n, int root_min, uint32_t k, int64_t *par, int64_t *l, int64_t *r) {
  uint32_t root = root_min ? 0 : n - 1;
  uint32_t lo = root_min ? 1 : 0, hi = root_min ? n - 1 : n - 2;
  *par = *l = *r = -1;
  if (k == root) {
    if (root_min) *r = (lo + hi) / 2;
    else *l = (lo + hi) / 2;
    return;
  }
  int64_t up = root;
  for (;;) {
    uint32_t mid = (lo + hi) / 2;
    if (k == mid) {
      *par = up;
      if (lo < mid) *l = (lo + mid - 1) / 2;
      if (mid < hi) *r = (mid + 1 + hi) / 2;
      return;
    }
    up = mid;
    if (k < mid) hi = mid - 1;
    else lo = mid + 1;
  }
}

enum { DBT_ROOT = 0, DBT_INTER, DBT_LEAF };
enum {
  DS_BEGIN = 0,
  DS_SEND_PARENT,
  DS_WAIT_PARENT,
  DS_END,
  DS_WAIT_TWO,
  DS_WAIT_ONE,
  DS_SEND_CHILDREN
};
enum { DE_INIT = 0, DE_GENERAL, DE_RECV };

static int dbt_bundle(etsim_coll_t *c, uint32_t si, int processed) {
  stream_t *s = &c->streams[si];
  int64_t delay = c->cfg.endpoint_delay_ns;
  if (processed) delay += reduce_ns(c, CP(s)->size);
  return etsim_des_push(c->q, etsim_des_at_ns(c->q, delay), ETSIM_COLL_EV_GENERAL, 0, si);
}

void etsim_coll__dbt_setup(stream_t *s) {
  phase_t *p = CP(s);
  s->dbt = 1;
  uint32_t n = p->ring.n;
  uint32_t k = (s->npu - p->tree_start) / p->tree_stride;
  int64_t par, l, r;
  tree_links(n, p->tree_min, k, &par, &l, &r);
  s->dbt_parent = par < 0 ? NIL : p->tree_start + (uint32_t)par * p->tree_stride;
  s->dbt_left = l < 0 ? NIL : p->tree_start + (uint32_t)l * p->tree_stride;
  s->dbt_right = r < 0 ? NIL : p->tree_start + (uint32_t)r * p->tree_stride;
  s->dbt_role = par < 0 ? DBT_ROOT : (l < 0 && r < 0) ? DBT_LEAF : DBT_INTER;
  s->dbt_state = DS_BEGIN;
  s->dbt_reductions = 0;
  s->parallel_reduce = 1;
}

/* The per-role state machine of ASTRA-sim's DoubleBinaryTreeAllReduce:
 * leaves send up and wait for the result; inner nodes reduce both children,
 * send up, wait, and send down; the root reduces its child and sends the
 * result back.  Every step pays the endpoint delay, reductions 3 passes. */
static int dbt_run(etsim_coll_t *c, uint32_t si, int ev) {
  stream_t *s = &c->streams[si];
  uint64_t sz = CP(s)->size, tag = s->tag;
  uint32_t me = s->npu;
  int rc = 0;
  switch (s->dbt_role) {
    case DBT_LEAF:
      if (s->dbt_state == DS_BEGIN) {
        s->dbt_state = DS_SEND_PARENT;
        return dbt_bundle(c, si, 0);
      }
      if (s->dbt_state == DS_SEND_PARENT) {
        s->dbt_state = DS_WAIT_PARENT;
        uint32_t par = s->dbt_parent;
        if ((rc = post_send(c, me, par, sz, tag, 0))) return rc;
        return post_recv(c, me, par, sz, tag, TOK_STREAM | si);
      }
      if (s->dbt_state == DS_WAIT_PARENT) {
        s->dbt_state = DS_END;
        return dbt_bundle(c, si, 0);
      }
      return proceed(c, si); /* DS_END */
    case DBT_INTER:
      if (s->dbt_state == DS_BEGIN) {
        s->dbt_state = DS_WAIT_TWO;
        uint32_t l = s->dbt_left, r = s->dbt_right;
        if ((rc = post_recv(c, me, l, sz, tag, TOK_STREAM | si))) return rc;
        return post_recv(c, me, r, sz, tag, TOK_STREAM | si);
      }
      if (s->dbt_state == DS_WAIT_TWO && ev == DE_RECV) {
        s->dbt_state = DS_WAIT_ONE;
        return dbt_bundle(c, si, 1);
      }
      if (s->dbt_state == DS_WAIT_ONE && ev == DE_RECV) {
        s->dbt_state = DS_SEND_PARENT;
        return dbt_bundle(c, si, 1);
      }
      if (s->dbt_reductions < 1 && ev == DE_GENERAL) {
        s->dbt_reductions++;
        return 0;
      }
      if (s->dbt_state == DS_SEND_PARENT) {
        s->dbt_state = DS_WAIT_PARENT;
        uint32_t par = s->dbt_parent;
        if ((rc = post_send(c, me, par, sz, tag, 0))) return rc;
        return post_recv(c, me, par, sz, tag, TOK_STREAM | si);
      }
      if (s->dbt_state == DS_WAIT_PARENT && ev == DE_RECV) {
        s->dbt_state = DS_SEND_CHILDREN;
        return dbt_bundle(c, si, 1);
      }
      if (s->dbt_state == DS_SEND_CHILDREN) {
        uint32_t l = s->dbt_left, r = s->dbt_right;
        if ((rc = post_send(c, me, l, sz, tag, 0))) return rc;
        if ((rc = post_send(c, me, r, sz, tag, 0))) return rc;
        return proceed(c, si);
      }
      return 0;
    default: /* DBT_ROOT */
      if (s->dbt_state == DS_BEGIN) {
        s->dbt_state = DS_WAIT_ONE;
        uint32_t ch = s->dbt_left != NIL ? s->dbt_left : s->dbt_right;
        return post_recv(c, me, ch, sz, tag, TOK_STREAM | si);
      }
      if (s->dbt_state == DS_WAIT_ONE) {
        s->dbt_state = DS_SEND_CHILDREN;
        return dbt_bundle(c, si, 1);
      }
      if (s->dbt_state == DS_SEND_CHILDREN) {
        uint32_t ch = s->dbt_left != NIL ? s->dbt_left : s->dbt_right;
        if ((rc = post_send(c, me, ch, sz, tag, 0))) return rc;
        return proceed(c, si);
      }
      return 0;
  }
}

/* ------------------------------------------------------ custom collectives */

/* A custom collective runs rank `pos`'s graph of send, receive and compute
 * nodes (ASTRA-sim's CustomAlgorithm): every dependency-free node issues
 * at once, sends and receives complete at delivery, compute nodes after
 * their duration; the stream ends when every node has finished. */
static int custom_issue(etsim_coll_t *c, uint32_t si, uint32_t node) {
  stream_t *s = &c->streams[si];
  const etsim_coll_custom_rank_t *g = s->cu;
  uint64_t tok = TOK_CUSTOM | (uint64_t)si << 32 | node;
  const phase_t *p = CP(s);
  uint32_t peer = g->peer[node];
  if (p->ring.members) peer = p->ring.members[peer];
  switch (g->kind[node]) {
    case ETSIM_CUSTOM_SEND:
      return post_send(c, s->npu, peer, g->bytes[node], g->tag[node], tok);
    case ETSIM_CUSTOM_RECV:
      return post_recv(c, s->npu, peer, g->bytes[node], g->tag[node], tok);
    case ETSIM_CUSTOM_COMP: {
      int64_t ns = g->dur_ns[node] > 0 ? g->dur_ns[node] : 1;
      return etsim_des_push(c->q, etsim_des_at_ns(c->q, ns), ETSIM_COLL_EV_CUSTOM, s->npu, tok);
    }
    default:
      return etsim_des_push(c->q, c->q->now_ps, ETSIM_COLL_EV_CUSTOM, s->npu, tok);
  }
}

static int custom_start(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const etsim_coll_custom_rank_t *g = s->cu;
  /* a rank with nothing to do: no counts (the stream's slot is cleared
   * when reused, so counts allocated here would be lost) */
  if (g->n == 0) return proceed(c, si);
  s->cu_deps = etsim_malloc(g->n * sizeof *s->cu_deps);
  if (!s->cu_deps) return ETSIM_ENOMEM;
  memcpy(s->cu_deps, g->n_par, g->n * sizeof *s->cu_deps);
  s->cu_left = g->n;
  for (uint32_t i = 0; i < g->n; i++)
    if (g->n_par[i] == 0) {
      int rc = custom_issue(c, si, i);
      if (rc) return rc;
    }
  return 0;
}

static int custom_done(etsim_coll_t *c, uint64_t tok) {
  uint32_t si = (uint32_t)(TOK_VAL(tok) >> 32), node = (uint32_t)tok;
  stream_t *s = &c->streams[si];
  const etsim_coll_custom_rank_t *g = s->cu;
  for (uint32_t e = g->chd_off[node]; e < g->chd_off[node + 1]; e++) {
    uint32_t ch = g->chd[e];
    if (--s->cu_deps[ch] == 0) {
      int rc = custom_issue(c, si, ch);
      if (rc) return rc;
      s = &c->streams[si];
    }
  }
  if (--s->cu_left == 0) {
    etsim_free(s->cu_deps);
    s->cu_deps = NULL;
    return proceed(c, si);
  }
  return 0;
}

int etsim_coll_set_custom(etsim_coll_t *c, etsim_cop_t op, const etsim_coll_custom_t *cu) {
  if ((unsigned)op >= ETSIM_COP_N) return ETSIM_EINVAL;
  c->custom[op] = cu;
  return 0;
}

/* ------------------------------------------------------------- messaging */

/* A message's record, for a message whose delivery needs more than its
 * matching entry: the send handler, the NPU (or switch) that sent it, its
 * destination (a switch id for one up to a switch), its matching entry
 * (NIL: none, the switch takes it) and the key the switch files it under.
 * *out is its index, the token the network carries. */
static int msg_record(etsim_coll_t *c, uint64_t send_token, uint32_t sender, uint32_t dst,
                      uint32_t entry, uint64_t tag, uint64_t bytes, uint32_t *out) {
  POOL_ALLOC(c, msgs, n_msgs, cap_msgs, free_msg, out);
  c->msgs[*out] = (msgrec_t){.send_token = send_token,
                             .entry = entry,
                             .sender = sender,
                             .dst = dst,
                             .tag = tag,
                             .bytes = bytes};
  return 0;
}

static int post_send(etsim_coll_t *c, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t tag,
                     uint64_t send_token) {
  c->stats.messages++;
  uint32_t from = src, to = dst;
  const etsim_coll_symmetry_t *sy = c->sym;
  if (sy) {
    if (sy->rep[dst] != dst) {
      /* dst is g(rep[dst]) for g = prod shift_i^pos_i(dst): rep[dst]
       * receives the image of this message, from g^-1(src), at the same
       * time (costs are G-invariant). */
      to = sy->rep[dst];
      for (uint32_t i = 0; i < sy->n_gen; i++) {
        uint32_t n = sy->len[i], p = sy->pos[i][from], d = sy->pos[i][dst] % n;
        from = sy->members[i][sy->first[i][from] + (p + n - d) % n];
      }
    }
    uint32_t one;
    if (etsim_u64map_put(&c->pairs, (uint64_t)from << 32 | to, 0, &one) < 0) return ETSIM_ENOMEM;
  }
  uint32_t k;
  int rc = match_get(c, tag, from, to, bytes, &k);
  if (rc) return rc;
  c->match[k].inflight++;
  uint64_t token = TOKEN_FAST | k;
  if (send_token) {
    uint32_t mi;
    if ((rc = msg_record(c, send_token, src, to, k, tag, bytes, &mi))) return rc;
    token = mi;
  }
  if (!c->q->track) return etsim_net_send(c->net, from, to, bytes, token);
  /* Provenance: the delivery is pushed, in the exact run, by `from`. */
  uint32_t pusher = c->q->pusher;
  c->q->pusher = from;
  rc = etsim_net_send(c->net, from, to, bytes, token);
  c->q->pusher = pusher;
  return rc;
}

static int post_recv(etsim_coll_t *c, uint32_t dst, uint32_t src, uint64_t bytes, uint64_t tag,
                     uint64_t recv_token) {
  uint32_t k;
  int rc = match_get(c, tag, src, dst, bytes, &k);
  if (rc) return rc;
  match_t *e = &c->match[k];
  if (e->arrived) {
    e->arrived--;
    match_release(c, k);
    /* A receive posted after the arrival completes at +0, as a new event. */
    return etsim_des_push(c->q, c->q->now_ps, ETSIM_COLL_EV_RECV, dst, recv_token);
  }
  if (e->n_recv++ == 0) {
    e->tok0 = recv_token; /* the common case: one receive waits, inline */
    return 0;
  }
  uint32_t ri;
  POOL_ALLOC(c, rq, n_rq, cap_rq, free_rq, &ri);
  c->rq[ri].token = recv_token;
  c->rq[ri].next = NIL;
  e = &c->match[k];
  if (e->tail != NIL) c->rq[e->tail].next = ri;
  else e->head = ri;
  e->tail = ri;
  return 0;
}

static int user_done(etsim_coll_t *c, uint32_t npu, uint64_t token) {
  c->done(c->user, npu, TOK_VAL(token));
  return 0;
}

static int deliver(etsim_coll_t *c, uint64_t token) {
  uint32_t k, sender = 0;
  uint64_t send_token = 0;
  int rc;
  if (token & TOKEN_FAST) {
    k = (uint32_t)token;
  } else {
    msgrec_t m = c->msgs[(uint32_t)token];
    /* next_free shares its word with entry: read the record first */
    c->msgs[(uint32_t)token].next_free = c->free_msg;
    c->free_msg = (uint32_t)token;
    send_token = m.send_token;
    sender = m.sender;
    if (m.dst & ETSIM_COLL_SWITCH_BIT) {
      /* in-network reduction: the switch takes it (innet.c), reading the
       * phase from the sender's stream before the sender moves on */
      uint32_t si = (uint32_t)TOK_VAL(send_token);
      if ((rc = etsim_coll__ext_at_switch(c, si, m.dst, m.bytes, m.tag))) return rc;
      return etsim_coll__ext_sent(c, si);
    }
    k = m.entry;
  }
  match_t *e = &c->match[k];
  uint32_t dst = e->dst;
  e->inflight--;
  uint64_t recv_token = 0;
  if (e->n_recv) {
    recv_token = e->tok0;
    if (--e->n_recv) { /* the next waiting receive moves inline */
      uint32_t ri = e->head;
      e->tok0 = c->rq[ri].token;
      e->head = c->rq[ri].next;
      if (e->head == NIL) e->tail = NIL;
      c->rq[ri].next_free = c->free_rq;
      c->free_rq = ri;
    }
  } else {
    e->arrived++;
  }
  match_release(c, k);
  /* The send handler runs first, then the receive handler (ASTRA-sim). */
  if (send_token && TOK_KIND(send_token) == TOK_STREAM) {
    /* --ring-window: a credit comes back; a held piece may go */
    uint32_t si = (uint32_t)TOK_VAL(send_token);
    int sent;
    if (etsim_coll__ext_phase(CP(&c->streams[si]))) {
      if ((rc = etsim_coll__ext_sent(c, si))) return rc;
      goto receiver;
    }
    c->streams[si].inflight--;
    if ((rc = ready(c, si, &sent)) || (rc = iteratable(c, si))) return rc;
  }
  if (send_token && TOK_KIND(send_token) == TOK_USER)
    if ((rc = user_done(c, sender, send_token))) return rc;
  if (send_token && TOK_KIND(send_token) == TOK_CUSTOM)
    if ((rc = custom_done(c, send_token))) return rc;
receiver:
  if (recv_token) {
    if (TOK_KIND(recv_token) == TOK_STREAM) return on_recv(c, (uint32_t)TOK_VAL(recv_token));
    if (TOK_KIND(recv_token) == TOK_CUSTOM) return custom_done(c, recv_token);
    return user_done(c, dst, recv_token);
  }
  return 0;
}

/* The message for a point-to-point call that failed with rc. */
static int p2p_error(const etsim_coll_t *c, int rc, const char *what, uint32_t src, uint32_t dst,
                     uint64_t bytes, uint32_t tag, etsim_error_t *err) {
  if (rc == ETSIM_ERANGE)
    return etsim_error_set(err, rc,
                           "system layer: at %.3f us a %s of %llu bytes from NPU %u to NPU %u "
                           "(tag %u) would end beyond the simulated clock's horizon (2^62 ps, "
                           "about 53 days): check comm_size against the network's bandwidth "
                           "and latency",
                           (double)c->q->now_ps / 1e6, what, (unsigned long long)bytes, src, dst,
                           tag);
  return etsim_error_set(err, rc,
                         "system layer: %s of %llu bytes from NPU %u to NPU %u (tag %u): %s", what,
                         (unsigned long long)bytes, src, dst, tag, etsim_strerror(rc));
}

int etsim_coll_send(etsim_coll_t *c, uint32_t src, uint32_t dst, uint64_t bytes, uint32_t tag,
                    uint64_t token, etsim_error_t *err) {
  int rc = post_send(c, src, dst, bytes, tag, TOK_USER | token);
  return rc ? p2p_error(c, rc, "send", src, dst, bytes, tag, err) : 0;
}

int etsim_coll_recv(etsim_coll_t *c, uint32_t dst, uint32_t src, uint64_t bytes, uint32_t tag,
                    uint64_t token, etsim_error_t *err) {
  int rc = post_recv(c, dst, src, bytes, tag, TOK_USER | token);
  return rc ? p2p_error(c, rc, "receive", src, dst, bytes, tag, err) : 0;
}

int etsim_coll_event(etsim_coll_t *c, const etsim_des_event_t *ev, etsim_error_t *err) {
  int rc = 0;
  if (c->q->track) {
    uint64_t key;
    etsim_coll_event_key(c, ev, &c->q->pusher, &key);
  }
  switch (ev->type) {
    case ETSIM_COLL_EV_DELIVER:
      rc = deliver(c, ev->b);
      break;
    case ETSIM_COLL_EV_HOP:
      rc = etsim_net_event(c->net, ev);
      break;
    case ETSIM_COLL_EV_GENERAL:
      rc = on_general(c, (uint32_t)ev->b);
      break;
    case ETSIM_COLL_EV_CUSTOM:
      rc = custom_done(c, ev->b);
      break;
    case ETSIM_COLL_EV_EXT:
      rc = etsim_coll__ext_event(c, ev);
      break;
    case ETSIM_COLL_EV_RECV:
      if (TOK_KIND(ev->b) == TOK_STREAM) rc = on_recv(c, (uint32_t)TOK_VAL(ev->b));
      else if (TOK_KIND(ev->b) == TOK_CUSTOM) rc = custom_done(c, ev->b);
      else rc = user_done(c, ev->a, ev->b);
      break;
    default:
      rc = ETSIM_EINTERNAL;
  }
  if (rc == ETSIM_ERANGE && err && !err->code)
    etsim_error_set(err, rc,
                    "system layer: at %.3f us a collective's message or reduction would end "
                    "beyond the simulated clock's horizon (2^62 ps, about 53 days): check "
                    "comm_size against the network's bandwidth and latency",
                    (double)c->q->now_ps / 1e6);
  else if (rc && err && !err->code)
    etsim_error_set(err, rc, "system layer: %s at t=%lld ps", etsim_strerror(rc),
                    (long long)c->q->now_ps);
  return rc;
}

/* The mailbox a key lives in (or, rarely, the table's). */
static void prefetch_slot(const etsim_coll_t *c, uint64_t tag, uint32_t src, uint32_t dst,
                          uint64_t bytes) {
  (void)tag, (void)src, (void)bytes;
  __builtin_prefetch(&c->mbox[dst]);
}

void etsim_coll_prefetch(const etsim_coll_t *c, uint32_t type, uint64_t b, int stage) {
  if (type == ETSIM_COLL_EV_DELIVER && (b & TOKEN_FAST)) {
    const match_t *e = &c->match[(uint32_t)b];
    if (stage == 0) {
      __builtin_prefetch(e);
      return;
    }
    /* the entry is in cache now: its slot (for the release) and the
     * stream the arrival wakes */
    prefetch_slot(c, e->tag, e->src, e->dst, e->bytes);
    if (e->n_recv && TOK_KIND(e->tok0) == TOK_STREAM) {
      const stream_t *s = &c->streams[(uint32_t)TOK_VAL(e->tok0)];
      __builtin_prefetch(s);
      __builtin_prefetch((const char *)s + 64);
      __builtin_prefetch((const char *)s + 128);
    }
  } else if (type == ETSIM_COLL_EV_GENERAL) {
    const stream_t *s = &c->streams[(uint32_t)b];
    if (stage == 0) {
      __builtin_prefetch(s);
      __builtin_prefetch((const char *)s + 64);
      __builtin_prefetch((const char *)s + 128);
      return;
    }
    /* a ring stream's next send and receive: their matching slots */
    if (s->direct || s->hd || s->dbt || s->cu || !s->initialized || !s->cur.ring.n) return;
    const phase_t *p = &s->cur;
    prefetch_slot(c, s->tag, s->npu, ring_offset(&p->ring, p->dir), s->msg);
    prefetch_slot(c, s->tag, ring_offset(&p->ring, -p->dir), s->npu, s->msg);
  }
}

/* ------------------------------------------------------------------ issue */

/* Logical dimensions of a collective: what GeneralComplexTopology builds
 * from the implementation list. */
typedef struct ldim {
  int phys; /* physical dimension, or -1 for a ring over all NPUs */
  uint32_t n;
  etsim_coll_impl_t impl;
} ldim_t;

static int logical_dims(const etsim_coll_t *c, const etsim_coll_impl_t *impl, int n_impl,
                        ldim_t *out) {
  int k = 0;
  for (int d = 0; d < n_impl; d++) {
    if (etsim_coll__algo(impl[d].kind)->flags & AF_ONE) {
      out[k++] = (ldim_t){-1, c->n_npus, impl[d]};
      return k;
    }
    out[k++] = (ldim_t){d, c->topo->npus[d], impl[d]};
  }
  return k;
}

static void ring_for(const etsim_coll_t *c, uint32_t npu, const ldim_t *ld, ringmap_t *r) {
  memset(r, 0, sizeof *r);
  r->n = ld->n;
  if (ld->phys < 0) {
    r->base = 0;
    r->stride = 1;
    r->pos = npu;
  } else {
    uint32_t st = c->topo->stride[ld->phys];
    r->stride = st;
    r->pos = etsim_topo_coord(c->topo, npu, ld->phys);
    r->base = npu - r->pos * st;
  }
}

static uint64_t final_size(etsim_cop_t t, uint64_t size, uint32_t n) {
  switch (t) {
    case ETSIM_COP_ALL_GATHER:
      return size * n;
    case ETSIM_COP_REDUCE_SCATTER:
      return size / n;
    default:
      return size;
  }
}

static int32_t next_priority(etsim_coll_t *c, uint32_t npu, int32_t explicit_pri) {
  switch (c->cfg.scheduling) {
    case ETSIM_SCHED_LIFO:
      return (int32_t)c->prio_counter[npu]++;
    case ETSIM_SCHED_FIFO:
      return (int32_t)c->prio_counter[npu]--;
    default:
      return explicit_pri;
  }
}

/* ASTRA-sim's queue levels: a dimension owns qpd queues.  Baseline phases
 * take them round-robin (anticlockwise rings on the second half); the
 * reduce-scatter and all-reduce phases of localBWAware take the first half
 * (clockwise), its all-gather phases the second half (anticlockwise). */
static uint32_t next_queue(etsim_coll_t *c, uint32_t npu, int level, int mode, int *dir) {
  uint32_t q = c->qpd, half = q / 2;
  uint16_t *a = &c->alloc[((size_t)npu * (size_t)c->topo->ndims + (size_t)level) * 3];
  uint32_t k;
  if (mode == 0) {
    k = a[0];
    *dir = q > 1 && k >= half ? -1 : 1;
    a[0] = (uint16_t)(k + 1 >= q ? 0 : k + 1);
  } else if (mode == 1) {
    k = a[1];
    *dir = 1;
    a[1] = (uint16_t)(k + 1 >= half ? 0 : k + 1);
  } else {
    k = a[2] < half ? half : a[2];
    *dir = -1;
    a[2] = (uint16_t)(k + 1 >= q ? half : k + 1);
  }
  return (uint32_t)level * q + k;
}

/* The dimensions NPU npu's messages in phase p cross: the physical
 * dimension of a dimension's ring; for a communicator's ring and the one*
 * rings over all NPUs, the first differing dimension (the one the
 * analytical model charges) towards each peer it sends to. */
uint32_t etsim_coll__phase_dims(const etsim_coll_t *c, uint32_t npu, const phase_t *p, int phys) {
  const etsim_topo_t *t = c->topo;
  if (phys >= 0) return 1u << phys;
  const ringmap_t *r = &p->ring;
  uint32_t m = 0, n = r->n;
  if (n < 2) return 0;
  etsim_algo_kind_t base = etsim_coll__algo(p->algo)->base;
  if (base == ETSIM_ALGO_DIRECT) {
    /* every peer (bounded: huge groups sample their first 1,024) */
    for (uint32_t k = 1; k < n && k <= 1024; k++) {
      int d = etsim_topo_first_diff_dim(t, npu, ring_offset(r, k));
      if (d >= 0) m |= 1u << d;
    }
  } else if (base == ETSIM_ALGO_HALVING_DOUBLING) {
    for (uint32_t off = 1; off < n; off *= 2)
      for (int sgn = -1; sgn <= 1; sgn += 2) {
        int d = etsim_topo_first_diff_dim(t, npu, ring_offset(r, sgn * (int64_t)off));
        if (d >= 0) m |= 1u << d;
      }
  } else {
    int d = etsim_topo_first_diff_dim(t, npu, ring_offset(r, p->dir));
    if (d >= 0) m |= 1u << d;
  }
  return m;
}

uint32_t etsim_coll_done_dims(const etsim_coll_t *c) { return c->done_dims; }

/* A collective's record, waiting for `total` streams. */
static int new_dataset(etsim_coll_t *c, uint32_t npu, uint32_t total, uint64_t token,
                       uint32_t *out) {
  POOL_ALLOC(c, datasets, n_datasets, cap_datasets, free_dataset, out);
  c->datasets[*out] = (dataset_t){npu, total, 0, NIL, 0, token, c->q->now_ps};
  c->live_datasets++;
  c->stats.collectives++;
  return 0;
}

/* Tag stream si's messages.  On a communicator smaller than the world
 * (comm non-NULL) the number counts this NPU's collectives on it, the same
 * per-communicator numbering as ASTRA-sim's group rings; else this NPU's
 * collectives in all. */
static int stream_tag(etsim_coll_t *c, uint32_t si, const etsim_comm_t *comm) {
  uint32_t npu = c->streams[si].npu;
  if (!comm) {
    c->streams[si].tag = TAG_COLL | c->stream_counter[npu]++;
    return 0;
  }
  uint64_t key = (uint64_t)npu << 32 | comm->id;
  uint32_t slot = (uint32_t)c->n_gcount;
  int rc = etsim_u64map_put(&c->group_counter, key, slot, &slot);
  if (rc < 0) return rc;
  if (rc == 1) {
    if (c->n_gcount == c->cap_gcount &&
        (rc = etsim_grow((void **)&c->gcount, &c->cap_gcount, c->n_gcount + 1, sizeof *c->gcount)))
      return rc;
    c->gcount[c->n_gcount++] = 0;
  }
  /* The communicator's id above the collective tag bit, the count below it:
   * ids up to 2^21 (group files allow 2,000,000) and 2^40 collectives per
   * communicator never meet another's tags (id * 10^6 + count did, past
   * bit 40 or a millionth collective). */
  c->streams[si].tag = TAG_COLL | (uint64_t)comm->id << TAG_GROUP_SHIFT | c->gcount[slot]++;
  return 0;
}

/* A cleared stream of dataset di with n_phases phases, not yet queued. */
static int new_stream(etsim_coll_t *c, uint32_t npu, uint32_t di, int32_t pri, int n_phases,
                      uint32_t *out) {
  if (n_phases > c->max_ph) return ETSIM_EINTERNAL;
  POOL_ALLOC(c, streams, n_streams, cap_streams, free_stream, out);
  stream_t *s = &c->streams[*out];
  memset(s, 0, sizeof *s); /* before anything can fail: destroy reads it */
  if (c->cap_streams > c->cap_phase_streams) {
    /* The phase lists grow with the stream pool, max_ph per slot. */
    phase_t *p = etsim_realloc(c->phases, c->cap_streams * (size_t)c->max_ph * sizeof *p);
    if (!p) return ETSIM_ENOMEM;
    c->phases = p;
    c->cap_phase_streams = c->cap_streams;
  }
  s->npu = npu;
  s->dataset = di;
  s->priority = pri;
  s->n_phases = (uint8_t)n_phases;
  s->cur_queue = -1;
  s->prev = s->next = NIL;
  c->live_streams++;
  c->stats.streams++;
  return 0;
}

/* A custom collective: one stream, one phase on queue 0, the whole size. */
static int issue_custom(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                        const etsim_comm_t *comm, int32_t priority, uint64_t token,
                        etsim_error_t *err) {
  const etsim_coll_custom_t *cu = c->custom[type];
  uint32_t pos = npu;
  /* Rank traces are positions in the communicator, of every NPU in any
   * order too (in id order NPU npu is at npu: no search). */
  if (comm && !(npu < comm->n && comm->members[npu] == npu)) {
    pos = UINT32_MAX;
    for (uint32_t i = 0; i < comm->n; i++)
      if (comm->members[i] == npu) pos = i;
  }
  if (pos == UINT32_MAX || pos >= cu->n_ranks)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "custom %s has %u rank traces; NPU %u (position %u) has "
                           "none",
                           etsim_coll_op_name(type), cu->n_ranks, npu, pos);
  int32_t pri = next_priority(c, npu, priority);
  uint32_t di, si;
  int rc = new_dataset(c, npu, 1, token, &di);
  if (!rc) rc = new_stream(c, npu, di, pri, 1, &si);
  if (rc) return rc;
  stream_t *s = &c->streams[si];
  s->cu = &cu->rank[pos];
  phase_t *ph = PHASES(c, si);
  memset(ph, 0, sizeof *ph);
  ph->type = (uint8_t)type;
  ph->algo = ETSIM_ALGO_N;
  ph->size = bytes;
  ph->ring.n = comm ? comm->n : c->n_npus;
  ph->ring.members = comm ? comm->members : NULL; /* peers are ranks: map them */
  ph->ring.pos = pos;
  /* its dimensions: those towards the peers its graph sends to */
  const etsim_coll_custom_rank_t *g = s->cu;
  for (uint32_t k = 0; k < g->n; k++)
    if (g->kind[k] == ETSIM_CUSTOM_SEND && g->peer[k] < ph->ring.n) {
      uint32_t peer = ph->ring.members ? ph->ring.members[g->peer[k]] : g->peer[k];
      int d = etsim_topo_first_diff_dim(c->topo, npu, peer);
      if (d >= 0) ph->dims |= (uint8_t)(1u << d);
    }
  c->datasets[di].dims = ph->dims;
  s->tag = TAG_COLL | c->stream_counter[npu]++;
  return proceed(c, si);
}

int etsim_coll_issue(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                     uint32_t involved, const etsim_comm_t *comm, int32_t priority, uint64_t token,
                     etsim_error_t *err) {
  return etsim_coll_issue_rooted(c, npu, type, bytes, involved, comm, 0, priority, token, err);
}

/* A collective being issued on one NPU: its logical dimensions (ASTRA-sim's
 * layout: the type's list, or one flat ring over a communicator smaller
 * than the network) in phase order. */
typedef struct issuing {
  uint32_t npu, di, involved;
  etsim_cop_t type;
  int nld, grouped;
  ldim_t ld[ETSIM_TOPO_MAX_DIMS];
  int order[ETSIM_TOPO_MAX_DIMS]; /* i-th in phase order: ld[order[i]] */
  ringmap_t group_ring;
} issuing_t;

/* Fill x's logical dimensions for a collective of type on NPU npu. */
static int issuing_dims(const etsim_coll_t *c, uint32_t npu, etsim_cop_t type,
                        const etsim_comm_t *comm, issuing_t *x, etsim_error_t *err) {
  x->npu = npu;
  x->type = type;
  x->grouped = comm && comm->n != c->n_npus;
  if (x->grouped) {
    /* A communicator smaller than the network is one flat ring over its
     * members, whatever the topology (ASTRA-sim's CommunicatorGroup). */
    etsim_coll_impl_t im = c->cfg.impl[type][0];
    if (c->cfg.n_impl[type] > 1) im = (etsim_coll_impl_t){ETSIM_ALGO_RING, -1};
    x->ld[0] = (ldim_t){-2, comm->n, im};
    x->nld = 1;
    memset(&x->group_ring, 0, sizeof x->group_ring);
    x->group_ring.n = comm->n;
    x->group_ring.members = comm->members;
    x->group_ring.pos = UINT32_MAX;
    for (uint32_t i = 0; i < comm->n; i++)
      if (comm->members[i] == npu) x->group_ring.pos = i;
    if (x->group_ring.pos == UINT32_MAX)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "NPU %u issues a collective on communicator %u, "
                             "which does not contain it",
                             npu, comm->id);
  } else {
    x->nld = logical_dims(c, c->cfg.impl[type], c->cfg.n_impl[type], x->ld);
  }
  /* Dimension order: ascending, descending for all-gather. */
  for (int d = 0; d < x->nld; d++) x->order[d] = type == ETSIM_COP_ALL_GATHER ? x->nld - 1 - d : d;
  return 0;
}

/* What the algorithms of x's dimensions need (algo.c's rows): the
 * collective among those they run, a power-of-two ring, a whole dimension
 * for a tree. */
static int issuing_check(const issuing_t *x, const etsim_comm_t *comm, etsim_error_t *err) {
  for (int d = 0; d < x->nld; d++) {
    const etsim_coll__algo_t *a = etsim_coll__algo(x->ld[d].impl.kind);
    uint32_t n = x->ld[d].n;
    if (!(a->ops >> x->type & 1u))
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s cannot use %s (ASTRA-sim "
                             "rejects it too): use ring or direct",
                             etsim_coll_op_name(x->type), a->name);
    if ((a->flags & AF_POW2) && n > 1 && (n & (n - 1)))
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s needs a power-of-two number of NPUs, not %u (ASTRA-sim "
                             "deadlocks on it): use ring or direct",
                             a->name, n);
    if (a->flags & AF_WHOLE_DIM) {
      if (x->grouped)
        return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                               "%s on communicator %u: "
                               "trees need a whole dimension (ASTRA-sim misreads this case)",
                               a->name, comm->id);
      if (n & (n - 1))
        return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                               "%s needs a power-of-two "
                               "dimension, not %u NPUs (ASTRA-sim crashes on it)",
                               a->name, n);
    }
  }
  return 0;
}

/* Whether the i-th dimension in phase order takes part. */
static int issuing_active(const issuing_t *x, int i) {
  int l = x->order[i];
  return x->ld[l].n > 1 && (x->grouped || (x->involved >> l) & 1u);
}

/* Phase p: type t on the i-th dimension in phase order, `remain` bytes, on
 * the queue next_queue's mode gives; the algorithm's row fills its part.
 * Returns the size the next phase starts from. */
static uint64_t issuing_phase(etsim_coll_t *c, const issuing_t *x, etsim_cop_t t, int i, int mode,
                              uint64_t remain, phase_t *p) {
  int level = x->order[i];
  const ldim_t *l = &x->ld[level];
  memset(p, 0, sizeof *p);
  p->type = (uint8_t)t;
  p->algo = (uint8_t)etsim_coll__phase_algo(c, t, l->phys, l->impl.kind);
  p->window = l->impl.window;
  int dir = 1;
  p->queue = next_queue(c, x->npu, level, mode, &dir);
  p->dir = (int8_t)dir;
  p->size = remain;
  if (x->grouped) {
    p->ring = x->group_ring;
    p->fast = 1;
  } else {
    ring_for(c, x->npu, l, &p->ring);
  }
  p->dims = (uint8_t)etsim_coll__phase_dims(c, x->npu, p, l->phys);
  c->datasets[x->di].dims |= p->dims;
  return etsim_coll__algo(p->algo)->phase(c, x->npu, x->type, level, level == x->nld - 1, p);
}

/* The phases of one chunk: the collective on every dimension taking part;
 * localBWAware's all-reduce as reduce-scatter up, all-reduce on the last
 * dimension, all-gather down.  Returns the count. */
static int issuing_chunk(etsim_coll_t *c, const issuing_t *x, uint64_t chunk, phase_t *ph) {
  int np = 0, nld = x->nld;
  uint64_t remain = chunk;
  if (x->type != ETSIM_COP_ALL_REDUCE || !c->cfg.local_bw_aware) {
    for (int i = 0; i < nld; i++)
      if (issuing_active(x, i)) remain = issuing_phase(c, x, x->type, i, 0, remain, &ph[np++]);
    return np;
  }
  int last = 0, i;
  for (i = 0; i < nld; i++)
    if (issuing_active(x, i)) last = i;
  for (i = 0; i < last; i++)
    if (issuing_active(x, i))
      remain = issuing_phase(c, x, ETSIM_COP_REDUCE_SCATTER, i, 1, remain, &ph[np++]);
  while (i > 0 && !issuing_active(x, i)) i--;
  if (issuing_active(x, i))
    remain = issuing_phase(c, x, ETSIM_COP_ALL_REDUCE, i, 1, remain, &ph[np++]);
  for (i--; i >= 0; i--)
    if (issuing_active(x, i))
      remain = issuing_phase(c, x, ETSIM_COP_ALL_GATHER, i, 2, remain, &ph[np++]);
  return np;
}

int etsim_coll_issue_rooted(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                            uint32_t involved, const etsim_comm_t *comm, uint32_t root,
                            int32_t priority, uint64_t token, etsim_error_t *err) {
  if ((unsigned)type >= ETSIM_COP_N)
    return etsim_error_set(err, ETSIM_EINVAL, "unknown collective type %d", (int)type);
  /* a barrier carries no data: its messages may be empty */
  if (bytes == 0 && type != ETSIM_COP_BARRIER)
    return etsim_error_set(err, ETSIM_EINVAL, "collective of size 0");
  if (c->custom[type]) return issue_custom(c, npu, type, bytes, comm, priority, token, err);
  if (etsim_coll__ext_wants(c, type, comm))
    return etsim_coll__ext_issue(c, npu, type, bytes, involved, comm, root, priority, token, err);
  issuing_t x;
  int rc = issuing_dims(c, npu, type, comm, &x, err);
  if (!rc) rc = issuing_check(&x, comm, err);
  if (rc) return rc;
  x.involved = involved;
  /* Chunking: size / splits, raised to the NPU count for all but
   * all-gather, which then inflates the collective (ASTRA-sim). */
  uint64_t size = bytes, chunk = size / c->cfg.splits;
  if (type != ETSIM_COP_ALL_GATHER && c->n_npus > chunk) {
    chunk = c->n_npus;
    size = (uint64_t)c->cfg.splits * chunk;
    if (!c->warned_clamp) {
      c->warned_clamp = 1;
      etsim_warn(
          "a %llu-byte %s is smaller than preferred-dataset-splits x NPUs; as ASTRA-sim "
          "does, each chunk is raised to %u bytes and the collective to %llu bytes",
          (unsigned long long)bytes, etsim_coll_op_name(type), c->n_npus, (unsigned long long)size);
    }
  }
  if (chunk == 0) chunk = 1;
  uint32_t n_streams = (uint32_t)((size + chunk - 1) / chunk);
  int32_t pri = next_priority(c, npu, priority);
  if ((rc = new_dataset(c, npu, n_streams, token, &x.di))) return rc;
  uint32_t made = 0;
  while (size > 0) {
    size = chunk > size ? 0 : size - chunk;
    phase_t ph[MAX_PHASES];
    int np = issuing_chunk(c, &x, chunk, ph);
    if (np == 0) break;
    uint32_t si;
    if ((rc = new_stream(c, npu, x.di, pri, np, &si))) return rc;
    memcpy(PHASES(c, si), ph, (size_t)np * sizeof *ph);
    if ((rc = stream_tag(c, si, x.grouped ? comm : NULL))) return rc;
    made++;
    if ((rc = proceed(c, si))) return rc;
  }
  if (made == 0) {
    /* Nothing to do (every dimension has one NPU): finish at once. */
    dataset_release(c, x.di);
    c->done(c->user, npu, token);
  } else if (made != n_streams) {
    c->datasets[x.di].total = made;
  }
  return 0;
}

/* The ring family's part of a phase: nothing more; the data a phase
 * leaves behind is the next one's start (all-gather grows it n-fold,
 * reduce-scatter shrinks it). */
uint64_t etsim_coll__ring_phase(etsim_coll_t *c, uint32_t npu, etsim_cop_t coll_type, int level,
                                int last, phase_t *p) {
  (void)c, (void)npu, (void)coll_type, (void)level, (void)last;
  return final_size((etsim_cop_t)p->type, p->size, p->ring.n);
}

/* A double binary tree's phase: which of the two trees (they alternate
 * per NPU, collective type and dimension), and the dimension's NPUs as
 * start + k * stride.  The phase always all-reduces, and leaves its size
 * unchanged. */
uint64_t etsim_coll__dbt_phase(etsim_coll_t *c, uint32_t npu, etsim_cop_t coll_type, int level,
                               int last, phase_t *p) {
  uint32_t st = c->topo->stride[level], n = p->ring.n;
  uint32_t *ctr =
      &c->dbt_counter[((size_t)npu * ETSIM_COP_N + coll_type) * ETSIM_TOPO_MAX_DIMS + level];
  p->tree_min = (uint8_t)((*ctr)++ % 2);
  p->tree_stride = st;
  p->tree_start = last ? npu % st : npu - npu % (st * n) + npu % st;
  p->type = ETSIM_COP_ALL_REDUCE;
  return p->size;
}

/* ------------------------------------------------------------- lifecycle */

int etsim_coll_create(etsim_coll_t **out, const etsim_sys_config_t *cfg, const etsim_topo_t *topo,
                      etsim_net_t *net, etsim_des_t *q, etsim_coll_done_fn done, void *user,
                      etsim_error_t *err) {
  if (cfg->splits == 0)
    return etsim_error_set(err, ETSIM_EINVAL, "preferred-dataset-splits must be >= 1");
  for (int t = 0; t < ETSIM_COP_N; t++) {
    if (cfg->n_impl[t] > topo->ndims)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s-implementation lists %d algorithms but the "
                             "network has %d dimensions",
                             etsim_coll_op_name((etsim_cop_t)t), cfg->n_impl[t], topo->ndims);
  }
  etsim_coll_t *c = etsim_calloc(1, sizeof *c);
  if (!c) return etsim_error_set(err, ETSIM_ENOMEM, "system layer: out of memory");
  c->cfg = *cfg;
  c->topo = topo;
  c->net = net;
  c->q = q;
  c->done = done;
  c->user = user;
  c->n_npus = topo->total;
  c->qpd = cfg->queues_per_dim ? cfg->queues_per_dim : 1;
  /* Phases per stream: one per dimension; localBWAware all-reduce goes up
   * and down again (2 ndims - 1), a tree barrier gathers and releases on
   * each dimension (2 ndims, ext.c); custom and communicator rings take
   * one. */
  c->max_ph = 2 * topo->ndims > 1 ? 2 * topo->ndims : 1;
  c->n_queues = topo->ndims * (int)c->qpd;
  {
    uint32_t ac = cfg->active_chunks ? cfg->active_chunks : 1;
    c->queue_threshold = (ac + c->qpd - 1) / c->qpd;
  }
  c->alloc = etsim_calloc((size_t)topo->total * (size_t)topo->ndims * 3, sizeof *c->alloc);
  {
    size_t nd = (size_t)topo->total * (size_t)topo->ndims;
    c->dim_run = etsim_calloc(nd, sizeof *c->dim_run);
    c->dim_last_ps = etsim_calloc(nd, sizeof *c->dim_last_ps);
    c->dim_busy_ps = etsim_calloc(nd, sizeof *c->dim_busy_ps);
    c->dim_exposed_ps = etsim_calloc(nd, sizeof *c->dim_exposed_ps);
    c->comp_on = etsim_calloc(topo->total, 1);
  }
  c->dbt_counter =
      etsim_calloc((size_t)topo->total * ETSIM_COP_N * ETSIM_TOPO_MAX_DIMS, sizeof *c->dbt_counter);
  c->reduce_ns_cache_bytes = -1;
  c->free_stream = c->free_dataset = c->free_msg = c->free_rq = c->free_match = NIL;
  etsim_u64map_init(&c->group_counter);
  etsim_u64map_init(&c->pairs);
  size_t nq = (size_t)c->n_npus * (size_t)c->n_queues;
  c->prio_counter = etsim_calloc(c->n_npus, sizeof *c->prio_counter);
  c->stream_counter = etsim_calloc(c->n_npus, sizeof *c->stream_counter);
  c->qhead = etsim_malloc(nq * sizeof *c->qhead);
  c->qtail = etsim_malloc(nq * sizeof *c->qtail);
  c->qrunning = etsim_calloc(nq, sizeof *c->qrunning);
  c->mbox = etsim_calloc(c->n_npus, sizeof *c->mbox);
  if (!c->dim_run || !c->dim_last_ps || !c->dim_busy_ps || !c->dim_exposed_ps || !c->comp_on ||
      !c->alloc || !c->dbt_counter || !c->prio_counter || !c->stream_counter || !c->qhead ||
      !c->qtail || !c->qrunning || !c->mbox) {
    etsim_coll_destroy(c);
    return etsim_error_set(err, ETSIM_ENOMEM, "system layer: out of memory for %u NPUs",
                           topo->total);
  }
  for (size_t i = 0; i < nq; i++) c->qhead[i] = c->qtail[i] = NIL;
  int xrc = etsim_coll__ext_create_check(c, err);
  if (xrc) {
    etsim_coll_destroy(c);
    return xrc;
  }
  /* Warn once per collective about ASTRA-sim's silent truncation. */
  for (int t = 0; t < ETSIM_COP_N; t++) {
    int n = cfg->n_impl[t], one = 0;
    for (int d = 0; d < n; d++)
      if (etsim_coll__algo(cfg->impl[t][d].kind)->flags & AF_ONE) one = 1;
    /* rooted types without a list use every dimension (n == 0) */
    if (!one && n > 0 && n < topo->ndims) {
      uint32_t used = 1;
      for (int d = 0; d < n; d++) used *= topo->npus[d];
      etsim_warn(
          "%s-implementation lists %d algorithm%s for a %d-dimensional network: as "
          "ASTRA-sim does, only the first %d dimension%s (%u NPUs per group) take part",
          etsim_coll_op_name((etsim_cop_t)t), n, n == 1 ? "" : "s", topo->ndims, n,
          n == 1 ? "" : "s", used);
    }
  }
  *out = c;
  return 0;
}

void etsim_coll_destroy(etsim_coll_t *c) {
  if (!c) return;
  etsim_coll__ext_destroy(c);
  etsim_free(c->alloc);
  etsim_free(c->dbt_counter);
  etsim_free(c->dim_run);
  etsim_free(c->dim_last_ps);
  etsim_free(c->dim_busy_ps);
  etsim_free(c->dim_exposed_ps);
  etsim_free(c->comp_on);
  etsim_free(c->prio_counter);
  etsim_free(c->stream_counter);
  etsim_free(c->qhead);
  etsim_free(c->qtail);
  etsim_free(c->qrunning);
  etsim_u64map_free(&c->group_counter);
  etsim_u64map_free(&c->pairs);
  etsim_free(c->gcount);
  /* A run stopped by an error leaves custom collectives mid-flight. */
  for (size_t i = 0; i < c->n_streams; i++) etsim_free(c->streams[i].cu_deps);
  etsim_free(c->streams);
  etsim_free(c->phases);
  etsim_free(c->datasets);
  etsim_free(c->msgs);
  etsim_free(c->match);
  etsim_free(c->mslot);
  etsim_free(c->mbox);
  etsim_free(c->free_stack);
  etsim_free(c->rq);
  etsim_free(c);
}

void etsim_coll_set_symmetry(etsim_coll_t *c, const etsim_coll_symmetry_t *sym) { c->sym = sym; }

const etsim_u64map_t *etsim_coll_pairs(const etsim_coll_t *c) { return &c->pairs; }

void etsim_coll_event_key(const etsim_coll_t *c, const etsim_des_event_t *ev, uint32_t *npu,
                          uint64_t *key) {
  switch (ev->type) {
    case ETSIM_COLL_EV_DELIVER: {
      uint32_t k;
      uint64_t send = 0;
      if (ev->b & TOKEN_FAST) {
        k = (uint32_t)ev->b;
      } else {
        const msgrec_t *m = &c->msgs[(uint32_t)ev->b];
        if (m->dst & ETSIM_COLL_SWITCH_BIT) { /* up to a switch: the sender's */
          *npu = m->sender;
          *key = m->send_token;
          return;
        }
        k = m->entry;
        send = m->send_token;
      }
      const match_t *e = &c->match[k];
      *npu = e->dst;
      /* A send handler makes the event distinct; a waiting receive names
       * its handler; an early arrival only counts. */
      *key = send ? send ^ (1ull << 61) : e->n_recv ? e->tok0 : 0;
      return;
    }
    case ETSIM_COLL_EV_GENERAL:
      *npu = c->streams[(uint32_t)ev->b].npu;
      *key = TOK_STREAM | (uint32_t)ev->b;
      return;
    case ETSIM_COLL_EV_HOP:
      *npu = ev->a;
      *key = 0;
      return;
    default: /* RECV, CUSTOM */
      *npu = ev->a;
      *key = ev->b;
      return;
  }
}

void etsim_coll_get_stats(const etsim_coll_t *c, etsim_coll_stats_t *out) {
  *out = c->stats;
  out->unmatched_arrivals = 0;
  out->pending_recvs = 0;
  for (size_t i = 0; i < c->n_match; i++) {
    const match_t *e = &c->match[i];
    if (e->inflight == UINT32_MAX) continue;
    out->unmatched_arrivals += e->arrived;
    out->pending_recvs += e->n_recv;
  }
}

int etsim_coll_check_idle(const etsim_coll_t *c, etsim_error_t *err) {
  etsim_coll_stats_t st;
  etsim_coll_get_stats(c, &st);
  if (c->live_streams == 0 && st.unmatched_arrivals == 0 && st.pending_recvs == 0) return 0;
  char buf[600];
  size_t len = 0;
  int shown = 0;
  for (size_t i = 0; i < c->n_match && shown < 4; i++) {
    const match_t *e = &c->match[i];
    if (e->inflight == UINT32_MAX || (!e->arrived && !e->n_recv)) continue;
    const char *ns = e->tag & TAG_COLL ? "collective stream" : "tag";
    uint64_t tag = e->tag & (TAG_COLL - 1); /* the count, without a communicator's id */
    if (e->n_recv)
      len += (size_t)snprintf(buf + len, sizeof buf - len,
                              "%sNPU %u waits for %llu bytes from NPU "
                              "%u (%s %llu) that were never sent",
                              shown ? "; " : "", e->dst, (unsigned long long)e->bytes, e->src, ns,
                              (unsigned long long)tag);
    else
      len += (size_t)snprintf(buf + len, sizeof buf - len,
                              "%sNPU %u sent %llu bytes to NPU %u "
                              "(%s %llu) that were never received",
                              shown ? "; " : "", e->src, (unsigned long long)e->bytes, e->dst, ns,
                              (unsigned long long)tag);
    if (len >= sizeof buf) len = sizeof buf - 1;
    shown++;
  }
  return etsim_error_set(err, ETSIM_EDEADLOCK,
                         "deadlock: %llu collective chunk%s never finished, "
                         "%llu message%s unreceived, %llu receive%s unmatched%s%s",
                         (unsigned long long)c->live_streams, c->live_streams == 1 ? "" : "s",
                         (unsigned long long)st.unmatched_arrivals,
                         st.unmatched_arrivals == 1 ? "" : "s",
                         (unsigned long long)st.pending_recvs, st.pending_recvs == 1 ? "" : "s",
                         shown ? ": " : "", shown ? buf : "");
}

/* ------------------------------------------- services for ext.c and co. */

int etsim_coll__send(etsim_coll_t *c, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t tag,
                     uint32_t notify_si) {
  return post_send(c, src, dst, bytes, tag, notify_si == NIL ? 0 : TOK_STREAM | notify_si);
}

int etsim_coll__recv(etsim_coll_t *c, uint32_t dst, uint32_t src, uint64_t bytes, uint64_t tag,
                     uint32_t si) {
  return post_recv(c, dst, src, bytes, tag, TOK_STREAM | si);
}

int etsim_coll__send_switch(etsim_coll_t *c, uint32_t npu, int d, int up, uint64_t bytes,
                            uint64_t tag, uint32_t notify_si) {
  if (!c->net->ops->send_switch) return ETSIM_EUNSUPPORTED;
  c->stats.messages++;
  uint32_t st = c->topo->stride[d];
  uint32_t sw = ETSIM_COLL_SWITCH_ID(d, npu - etsim_topo_coord(c->topo, npu, d) * st);
  uint64_t tok = notify_si == NIL ? 0 : TOK_STREAM | notify_si;
  uint32_t mi;
  int rc;
  if (up) {
    /* to the switch, which takes it whole: no matching */
    if ((rc = msg_record(c, tok, npu, sw, NIL, tag, bytes, &mi))) return rc;
    return c->net->ops->send_switch(c->net, npu, d, 1, bytes, mi);
  }
  /* down: the NPU receives it from the switch like any message */
  uint32_t k;
  if ((rc = match_get(c, tag, sw, npu, bytes, &k))) return rc;
  c->match[k].inflight++;
  uint64_t token = TOKEN_FAST | k;
  if (tok) {
    if ((rc = msg_record(c, tok, sw, npu, k, tag, bytes, &mi))) return rc;
    token = mi;
  }
  return c->net->ops->send_switch(c->net, npu, d, 0, bytes, token);
}

int etsim_coll__wake(etsim_coll_t *c, uint32_t si, int64_t delay_ns) {
  return etsim_des_push(c->q, etsim_des_at_ns(c->q, delay_ns), ETSIM_COLL_EV_GENERAL, 0, si);
}

int etsim_coll__phase_end(etsim_coll_t *c, uint32_t si) { return proceed(c, si); }

int64_t etsim_coll__reduce_ns(etsim_coll_t *c, uint64_t bytes) { return reduce_ns(c, bytes); }

int32_t etsim_coll__priority(etsim_coll_t *c, uint32_t npu, int32_t explicit_pri) {
  return next_priority(c, npu, explicit_pri);
}

uint32_t etsim_coll__queue(etsim_coll_t *c, uint32_t npu, int level, int mode, int *dir) {
  return next_queue(c, npu, level, mode, dir);
}

int etsim_coll__new_dataset(etsim_coll_t *c, uint32_t npu, uint32_t total, uint64_t token,
                            uint32_t *out) {
  return new_dataset(c, npu, total, token, out);
}

int etsim_coll__new_stream(etsim_coll_t *c, uint32_t npu, uint32_t di, int32_t pri, int n_phases,
                           uint32_t *out) {
  return new_stream(c, npu, di, pri, n_phases, out);
}

int etsim_coll__launch(etsim_coll_t *c, uint32_t si, const etsim_comm_t *comm) {
  int rc = stream_tag(c, si, comm && comm->n != c->n_npus ? comm : NULL);
  if (rc) return rc;
  return proceed(c, si);
}

void etsim_coll__finish_empty(etsim_coll_t *c, uint32_t di, uint32_t npu, uint64_t token) {
  dataset_release(c, di);
  c->done(c->user, npu, token);
}

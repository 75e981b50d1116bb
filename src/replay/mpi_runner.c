/*
 * mpi_runner.c — `etsim-replay`, the MPI program that replays a trace set:
 *
 *   mpirun -np N etsim-replay [options] PREFIX
 *
 * Rank r replays the trace of rank r.  Before anything runs, the ranks agree
 * that the input is sound: the trace set has exactly N ranks, every plan
 * builds, every communicator sees the same sequence of collectives on all
 * its members, and every send has a matching receive (counts and a hash of
 * tags and sizes exchanged with MPI_Alltoall).  A problem found by any rank
 * is printed by that rank and all ranks exit with status 2: nothing hangs.
 * Then W warm-up and K timed iterations run, each between two barriers;
 * rank 0 gathers every node's times and prints the fidelity report.
 *
 * This file is also globbed into libetsim, which must not need MPI, so its
 * body is compiled only for the etsim-replay executable (ETSIM_REPLAY_MPI,
 * set by src/replay/CMakeLists.txt).
 */
#ifdef ETSIM_REPLAY_MPI

#include "etsim/replay.h"

#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: mpirun -np N etsim-replay [options] PREFIX\n"
    "       (or: etsim replay [--np N] [options] PREFIX)\n"
    "\n"
    "Replay a Chakra trace set on MPI + OpenBLAS: rank r runs <PREFIX>.<r>.et.\n"
    "\n"
    "options:\n"
    "  --iterations K     timed iterations (default 3)\n"
    "  --warmup W         untimed iterations first (default 1)\n"
    "  --compute-scale X  scale compute work and durations (default 1)\n"
    "  --comm-scale Y     scale communication sizes (default 1)\n"
    "  --ridge F          GEMM/stream threshold in flop/byte (default:\n"
    "                     measured at start-up)\n"
    "  --comm-group FILE  communicator groups: {\"pg_name\": [ranks], ...}\n"
    "  --deps data|ctrl|all  which edges order the replay (default all)\n"
    "  --check            fill send buffers with a pattern and verify every\n"
    "                     received byte (exit 1 on a mismatch)\n"
    "  --timeout S        abort when a node waits longer than S s (600)\n"
    "  --csv FILE         per-node times of all ranks\n"
    "  --timeline FILE    Chrome/Perfetto trace of the last iteration\n"
    "  --json             print the report as JSON\n"
    "  --quiet            no report (errors only)\n"
    "  --progress         rank 0 says on stderr what it does (etsim replay\n"
    "                     passes it when its stderr is a terminal)\n"
    "exit: 0 ok, 1 verification failed, 2 bad input, 3 internal/MPI error\n";

typedef struct {
  const char *prefix, *csv, *timeline, *comm_group;
  int iterations, warmup, check, json, quiet, progress;
  unsigned deps;
  double compute_scale, comm_scale, ridge, timeout_s;
} args_t;

/* One node's result as gathered on rank 0. */
typedef struct {
  uint64_t id;
  int32_t rank, kind, coll, peer, tag, check, mapped, group_size;
  uint64_t send_bytes, recv_bytes;
  double flops;
  int64_t rec_ns, mean_ns, start_ns, end_ns;
  char name[48];
} rec_t;

typedef struct {
  MPI_Comm comm;
  int size, me;
  const int *members; /* world rank of each group rank; NULL: identity */
} commctx_t;

typedef struct {
  int rank, world;
  args_t *a;
  etsim_replay_plan_t *plan;
  etsim_replay_groups_t groups;
  commctx_t world_ctx, *ctx; /* ctx[g] for plan groups (size 0: absent) */
  /* compute buffers */
  float *ga, *gb, *gc, *sa, *sb, *sc;
  /* per-op communication buffers */
  void **sbuf, **rbuf;
  uint64_t *sbytes, *rbytes;
  int32_t *root_g;
  int **v_counts;  /* uneven all-to-all: 4P ints (scount sdispl rcount rdispl) */
  uint8_t *check;  /* 0 unchecked, 1 ok, 2 mismatch */
  uint32_t *seq_k; /* point-to-point sequence number of the op */
  /* outstanding requests */
  MPI_Request *req;
  MPI_Request *pre; /* receives posted at the start of each iteration */
  uint32_t *req_op;
  int *idx;
  MPI_Status *st;
  int n_active;
  uint32_t *done_q; /* completed, not yet reported to the scheduler */
  int64_t *done_t;
  size_t n_done;
  etsim_u64map_t p2p_key; /* (peer, tag, dir) -> counter index */
  uint32_t *p2p_count;
  size_t n_p2p;
  int corrupt; /* $ETSIM_REPLAY_CORRUPT: flip a received bit on rank 0 */
} run_t;

/* ------------------------------------------------------------ patterns */

/* Small integers, so float sums over thousands of ranks stay exact. */
static float pat_red(int wr, uint64_t i) { return (float)((wr % 1024) + 1 + (int)(i % 61)); }

static uint32_t pat_word(int src, int dst, uint64_t i, uint32_t salt) {
  uint64_t x = ((uint64_t)(unsigned)src << 40) ^ ((uint64_t)(unsigned)dst << 20) ^
               ((uint64_t)salt << 48) ^ i;
  return (uint32_t)etsim_hash_u64(x);
}

static int member(const commctx_t *c, int g) { return c->members ? c->members[g] : g; }

static void fill(run_t *R, size_t u) {
  const etsim_replay_op_t *op = &R->plan->ops[u];
  const commctx_t *c = op->group >= 0 ? &R->ctx[op->group] : &R->world_ctx;
  int me = R->rank;
  if (op->kind == ETSIM_REPLAY_SEND) {
    uint32_t *w = R->sbuf[u];
    uint32_t salt = ((uint32_t)op->tag << 16) ^ R->seq_k[u];
    for (uint64_t i = 0; i < R->sbytes[u] / 4; i++) w[i] = pat_word(me, op->peer, i, salt);
    return;
  }
  if (op->kind != ETSIM_REPLAY_COLL || !R->sbytes[u]) return;
  if (op->n_split) {
    const int *v = R->v_counts[u];
    uint8_t *b = R->sbuf[u];
    for (int j = 0; j < c->size; j++)
      for (int i = 0; i < v[j]; i++)
        b[v[c->size + j] + i] = (uint8_t)pat_word(me, member(c, j), (uint64_t)i, 9);
    return;
  }
  uint64_t n = R->sbytes[u] / 4;
  switch (op->coll) {
    case ETSIM_COLL_ALL_REDUCE:
    case ETSIM_COLL_REDUCE:
    case ETSIM_COLL_REDUCE_SCATTER:
    case ETSIM_COLL_REDUCE_SCATTER_BLOCK: {
      float *f = R->sbuf[u];
      for (uint64_t i = 0; i < n; i++) f[i] = pat_red(me, i);
      break;
    }
    case ETSIM_COLL_ALL_TO_ALL:
    case ETSIM_COLL_SCATTER: {
      /* Block j is for group rank j. */
      uint32_t *w = R->sbuf[u];
      uint64_t c_n = n / (uint64_t)c->size;
      for (int j = 0; j < c->size; j++)
        for (uint64_t i = 0; i < c_n; i++)
          w[(uint64_t)j * c_n + i] = pat_word(me, member(c, j), i, 7);
      break;
    }
    default: { /* broadcast, gather, all-gather: this rank's own words */
      uint32_t *w = R->sbuf[u];
      for (uint64_t i = 0; i < n; i++) w[i] = pat_word(me, -1, i, 7);
    }
  }
}

/* 1 when the received data is what the pattern predicts, else 0. */
static int verify(run_t *R, size_t u, const MPI_Status *st) {
  const etsim_replay_op_t *op = &R->plan->ops[u];
  const commctx_t *c = op->group >= 0 ? &R->ctx[op->group] : &R->world_ctx;
  int me = R->rank;
  uint64_t n = R->rbytes[u] / 4;
  if (op->kind == ETSIM_REPLAY_RECV) {
    int got = -1;
    MPI_Get_count(st, MPI_BYTE, &got);
    if ((uint64_t)got != R->rbytes[u] || st->MPI_SOURCE != op->peer || st->MPI_TAG != op->tag)
      return 0;
    const uint32_t *w = R->rbuf[u];
    uint32_t salt = ((uint32_t)op->tag << 16) ^ R->seq_k[u];
    for (uint64_t i = 0; i < n; i++)
      if (w[i] != pat_word(op->peer, me, i, salt)) return 0;
    return 1;
  }
  if (op->kind != ETSIM_REPLAY_COLL || !R->rbytes[u]) return 1;
  if (op->n_split) {
    const int *v = R->v_counts[u] + 2 * c->size;
    const uint8_t *b = R->rbuf[u];
    for (int j = 0; j < c->size; j++)
      for (int i = 0; i < v[j]; i++)
        if (b[v[c->size + j] + i] != (uint8_t)pat_word(member(c, j), me, (uint64_t)i, 9)) return 0;
    return 1;
  }
  const float *f = R->rbuf[u];
  const uint32_t *w = R->rbuf[u];
  uint64_t c_n = R->rbytes[u] / 4 / (uint64_t)c->size;
  int root = R->root_g[u];
  switch (op->coll) {
    case ETSIM_COLL_ALL_REDUCE:
    case ETSIM_COLL_REDUCE:
    case ETSIM_COLL_REDUCE_SCATTER:
    case ETSIM_COLL_REDUCE_SCATTER_BLOCK: {
      uint64_t off = 0;
      if (op->coll == ETSIM_COLL_REDUCE_SCATTER || op->coll == ETSIM_COLL_REDUCE_SCATTER_BLOCK)
        off = (uint64_t)c->me * n;
      for (uint64_t i = 0; i < n; i++) {
        double want = 0;
        for (int j = 0; j < c->size; j++) want += pat_red(member(c, j), off + i);
        if (f[i] != (float)want) return 0;
      }
      return 1;
    }
    case ETSIM_COLL_BROADCAST:
      for (uint64_t i = 0; i < n; i++)
        if (w[i] != pat_word(member(c, root), -1, i, 7)) return 0;
      return 1;
    case ETSIM_COLL_ALL_GATHER:
    case ETSIM_COLL_GATHER:
      for (int j = 0; j < c->size; j++)
        for (uint64_t i = 0; i < c_n; i++)
          if (w[(uint64_t)j * c_n + i] != pat_word(member(c, j), -1, i, 7)) return 0;
      return 1;
    case ETSIM_COLL_SCATTER:
      for (uint64_t i = 0; i < n; i++)
        if (w[i] != pat_word(member(c, root), me, i, 7)) return 0;
      return 1;
    case ETSIM_COLL_ALL_TO_ALL:
      for (int j = 0; j < c->size; j++)
        for (uint64_t i = 0; i < c_n; i++)
          if (w[(uint64_t)j * c_n + i] != pat_word(member(c, j), me, i, 7)) return 0;
      return 1;
    default:
      return 1;
  }
}

/* ------------------------------------------------------------ executor */

static int64_t x_now(void *u) {
  (void)u;
  return etsim_replay_clock_ns();
}

static int mpi_fail(run_t *R, size_t u, int code, etsim_error_t *err) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, s, &len);
  const etsim_replay_op_t *op = &R->plan->ops[u];
  return etsim_error_set(err, ETSIM_EINTERNAL, "%s: rank %d: node %llu (%s): %s", R->a->prefix,
                         R->rank, (unsigned long long)op->id, op->name, s);
}

static uint32_t p2p_next(run_t *R, int peer, int tag, int dir) {
  uint64_t key = ((uint64_t)(unsigned)peer << 17) | ((uint64_t)tag << 1) | (uint64_t)dir;
  uint32_t v;
  if (!etsim_u64map_get(&R->p2p_key, key, &v)) return 0; /* every key was added at setup */
  return R->p2p_count[v]++;
}

static int x_start(void *user, size_t u, etsim_error_t *err) {
  run_t *R = user;
  const etsim_replay_op_t *op = &R->plan->ops[u];
  const commctx_t *c = op->group >= 0 ? &R->ctx[op->group] : &R->world_ctx;
  MPI_Request *rq = &R->req[R->n_active];
  void *s = R->sbuf[u], *r = R->rbuf[u];
  int rc = MPI_SUCCESS;
  int root = R->root_g[u];
  if (op->kind == ETSIM_REPLAY_SEND) R->seq_k[u] = p2p_next(R, op->peer, op->tag, 1);
  if (R->a->check) fill(R, u);
  int whole = (int)(R->sbytes[u] > R->rbytes[u] ? R->sbytes[u] : R->rbytes[u]) / 4;
  int chunk =
      c->size ? (int)((op->coll == ETSIM_COLL_SCATTER ? R->rbytes[u] : R->sbytes[u]) / 4) : 0;
  switch (op->kind) {
    case ETSIM_REPLAY_SEND:
      rc = MPI_Isend(s, (int)R->sbytes[u], MPI_BYTE, op->peer, op->tag, MPI_COMM_WORLD, rq);
      break;
    case ETSIM_REPLAY_RECV:
      /* Posted at the start of the iteration (see prepost); the node waits
       * for it from now on. */
      (void)r;
      *rq = R->pre[u];
      R->pre[u] = MPI_REQUEST_NULL;
      break;
    default:
      switch (op->coll) {
        case ETSIM_COLL_ALL_REDUCE:
          rc = MPI_Iallreduce(s, r, whole, MPI_FLOAT, MPI_SUM, c->comm, rq);
          break;
        case ETSIM_COLL_REDUCE:
          rc = MPI_Ireduce(s, r, (int)(R->sbytes[u] / 4), MPI_FLOAT, MPI_SUM, root, c->comm, rq);
          break;
        case ETSIM_COLL_BROADCAST:
          rc = MPI_Ibcast(c->me == root ? s : r, whole, MPI_INT, root, c->comm, rq);
          break;
        case ETSIM_COLL_ALL_GATHER:
          rc = MPI_Iallgather(s, chunk, MPI_INT, r, chunk, MPI_INT, c->comm, rq);
          break;
        case ETSIM_COLL_GATHER:
          rc = MPI_Igather(s, chunk, MPI_INT, r, chunk, MPI_INT, root, c->comm, rq);
          break;
        case ETSIM_COLL_SCATTER:
          rc = MPI_Iscatter(s, chunk, MPI_INT, r, chunk, MPI_INT, root, c->comm, rq);
          break;
        case ETSIM_COLL_REDUCE_SCATTER:
        case ETSIM_COLL_REDUCE_SCATTER_BLOCK:
          rc = MPI_Ireduce_scatter_block(s, r, (int)(R->rbytes[u] / 4), MPI_FLOAT, MPI_SUM, c->comm,
                                         rq);
          break;
        case ETSIM_COLL_ALL_TO_ALL:
          if (op->n_split) {
            int *v = R->v_counts[u], P = c->size;
            rc = MPI_Ialltoallv(s, v, v + P, MPI_BYTE, r, v + 2 * P, v + 3 * P, MPI_BYTE, c->comm,
                                rq);
          } else {
            rc = MPI_Ialltoall(s, chunk / c->size, MPI_INT, r, chunk / c->size, MPI_INT, c->comm,
                               rq);
          }
          break;
        default:
          rc = MPI_Ibarrier(c->comm, rq);
      }
  }
  if (rc != MPI_SUCCESS) return mpi_fail(R, u, rc, err);
  R->req_op[R->n_active++] = (uint32_t)u;
  return 0;
}

/*
 * Test the outstanding requests once: completed ones are verified (with
 * --check) and queued with their completion time for the next poll.  Called
 * from poll and, while communication is outstanding, from inside compute
 * kernels, because non-blocking collectives advance only when the rank
 * enters MPI (one round per test with Open MPI's libnbc).
 */
static int progress(run_t *R, etsim_error_t *err) {
  if (!R->n_active) return 0;
  int out = 0;
  int rc = MPI_Testsome(R->n_active, R->req, &out, R->idx, R->st);
  if (rc != MPI_SUCCESS) return mpi_fail(R, R->req_op[0], rc, err);
  if (out == MPI_UNDEFINED || out == 0) return 0;
  int64_t now = etsim_replay_clock_ns();
  for (int j = 0; j < out; j++) {
    uint32_t u = R->req_op[R->idx[j]];
    /* Only what this rank receives into is checked. */
    if (R->a->check && R->plan->ops[u].kind != ETSIM_REPLAY_SEND && R->rbytes[u]) {
      /* Fault injection for the tests: prove that verify can fail. */
      if (R->corrupt && R->rank == 0 && R->rbytes[u] >= 4) ((uint32_t *)R->rbuf[u])[0] ^= 1u;
      R->check[u] = verify(R, u, &R->st[j]) ? 1 : 2;
    }
    R->done_q[R->n_done] = u;
    R->done_t[R->n_done++] = now;
  }
  /* Drop completed (now MPI_REQUEST_NULL) entries, keeping order. */
  int w = 0;
  for (int j = 0; j < R->n_active; j++)
    if (R->req[j] != MPI_REQUEST_NULL) {
      R->req[w] = R->req[j];
      R->req_op[w++] = R->req_op[j];
    }
  R->n_active = w;
  return 0;
}

static int x_poll(void *user, int block, size_t *done, int64_t *when, size_t max,
                  etsim_error_t *err) {
  run_t *R = user;
  int rc = progress(R, err);
  if (rc) return rc;
  int64_t t0 = 0;
  for (int spins = 0; block && !R->n_done; spins++) {
    /* Waiting: yield the core now and then (ranks may outnumber cores) and
     * give up after the timeout instead of hanging. */
    if (spins == 0) t0 = etsim_replay_clock_ns();
    if ((spins & 63) == 63) {
      /* Yield only once the wait is long: each yield on a loaded machine
       * can cost a time slice, and libnbc advances one round per test. */
      if (etsim_replay_clock_ns() - t0 > 2000000) sched_yield();
      if (etsim_replay_clock_ns() - t0 > (int64_t)(R->a->timeout_s * 1e9)) {
        const etsim_replay_op_t *op = &R->plan->ops[R->req_op[0]];
        return etsim_error_set(err, ETSIM_EDEADLOCK,
                               "%s: rank %d: node %llu (%s, %s) did not complete within %g s "
                               "(%d operation(s) outstanding): a peer never matched it",
                               R->a->prefix, R->rank, (unsigned long long)op->id, op->name,
                               op->kind == ETSIM_REPLAY_COLL ? etsim_coll_type_name(op->coll)
                                                             : etsim_replay_kind_name(op->kind),
                               R->a->timeout_s, R->n_active);
      }
    }
    if ((rc = progress(R, err))) return rc;
  }
  size_t k = 0;
  for (; k < R->n_done && k < max; k++) {
    done[k] = R->done_q[k];
    when[k] = R->done_t[k];
  }
  R->n_done = 0;
  return (int)k;
}

/* Work between two progress calls while communication is outstanding:
 * about 20 us of GEMM at 100 GFLOP/s, 20 us of spinning, 256 KiB of
 * streaming. */
enum { GEMM_CHUNK_FLOPS = 2000000, BUSY_POLL_NS = 20000, STREAM_CHUNK_FLOATS = 1 << 16 };

static int x_run(void *user, size_t u, etsim_error_t *err) {
  run_t *R = user;
  const etsim_replay_op_t *op = &R->plan->ops[u];
  int rc = 0;
  switch (op->kind) {
    case ETSIM_REPLAY_GEMM:
      for (int64_t b = 0; b < op->batch && !rc; b++) {
        if (!R->n_active) {
          etsim_replay_gemm(op->m, op->n, op->k, R->ga, R->gb, R->gc);
          continue;
        }
        /* Row blocks of C, with MPI progress in between. */
        int64_t rows = GEMM_CHUNK_FLOPS / (2 * op->n * op->k);
        if (rows < 1) rows = 1;
        for (int64_t r0 = 0; r0 < op->m && !rc; r0 += rows) {
          int64_t r = op->m - r0 < rows ? op->m - r0 : rows;
          etsim_replay_gemm(r, op->n, op->k, R->ga + r0 * op->k, R->gb, R->gc + r0 * op->n);
          rc = progress(R, err);
        }
      }
      break;
    case ETSIM_REPLAY_STREAM: {
      size_t n = op->bytes / 12;
      for (size_t i = 0; i < n && !rc; i += STREAM_CHUNK_FLOATS) {
        size_t c = n - i < STREAM_CHUNK_FLOATS ? n - i : STREAM_CHUNK_FLOATS;
        etsim_replay_triad(R->sa + i, R->sb + i, R->sc + i, c, 1.0001f);
        if (R->n_active) rc = progress(R, err);
      }
      break;
    }
    case ETSIM_REPLAY_BUSY: {
      int64_t end = etsim_replay_clock_ns() + op->busy_ns;
      for (;;) {
        int64_t now = etsim_replay_clock_ns();
        if (now >= end) break;
        if (R->n_active && end - now > BUSY_POLL_NS / 4) {
          etsim_replay_busy(end - now < BUSY_POLL_NS ? end - now : BUSY_POLL_NS);
          if ((rc = progress(R, err))) break;
        } else {
          etsim_replay_busy(end - now);
        }
      }
      break;
    }
    default:
      break;
  }
  return rc;
}

/*
 * Post every receive of the iteration up front, in file order.  A Chakra
 * send completes when its data has left; with MPI's rendezvous protocol an
 * Isend of a large message completes only once the receive is posted, so
 * a ring whose receives each wait for the rank's own send (as in ASTRA-sim's
 * custom collectives) would deadlock if receives were posted only when
 * their node became ready.  The receive node still starts when its parents
 * are done and ends when its data is there.
 */
static int prepost(run_t *R, etsim_error_t *err) {
  const etsim_replay_plan_t *p = R->plan;
  for (size_t u = 0; u < p->n_ops; u++) {
    const etsim_replay_op_t *op = &p->ops[u];
    if (op->kind != ETSIM_REPLAY_RECV) continue;
    R->seq_k[u] = p2p_next(R, op->peer, op->tag, 0);
    int rc = MPI_Irecv(R->rbuf[u], (int)R->rbytes[u], MPI_BYTE, op->peer, op->tag, MPI_COMM_WORLD,
                       &R->pre[u]);
    if (rc != MPI_SUCCESS) return mpi_fail(R, u, rc, err);
  }
  return 0;
}

/* ------------------------------------------------------------ setup */

/* Option `name` matched: 1 when its value v exists (and *i steps past it),
 * else an error and 0, which makes the caller report bad usage. */
static int take_value(const char *name, const char *v, int rank, int *i, int *missing) {
  if (!v) {
    if (rank == 0) fprintf(stderr, "etsim: %s needs a value\n", name);
    *missing = 1;
    return 0;
  }
  (*i)++;
  return 1;
}

static int parse_args(int argc, char **argv, args_t *a, int rank) {
  memset(a, 0, sizeof *a);
  a->iterations = 3;
  a->warmup = 1;
  a->compute_scale = a->comm_scale = 1.0;
  a->ridge = -1;
  a->timeout_s = 600;
  a->deps = ETSIM_REPLAY_DEPS_DATA | ETSIM_REPLAY_DEPS_CTRL;
  int missing = 0;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE(name) (strcmp(s, name) == 0 && take_value(name, v, rank, &i, &missing))
    char *end = NULL;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      if (rank == 0) fputs(usage, stdout);
      return 1;
    } else if (!strcmp(s, "--check")) a->check = 1;
    else if (!strcmp(s, "--json")) a->json = 1;
    else if (!strcmp(s, "--quiet") || !strcmp(s, "-q")) a->quiet = 1;
    else if (!strcmp(s, "--progress")) a->progress = 1;
    else if (TAKE("--iterations")) a->iterations = (int)strtol(v, &end, 10);
    else if (TAKE("--warmup")) a->warmup = (int)strtol(v, &end, 10);
    else if (TAKE("--compute-scale")) a->compute_scale = strtod(v, &end);
    else if (TAKE("--comm-scale")) a->comm_scale = strtod(v, &end);
    else if (TAKE("--ridge")) a->ridge = strtod(v, &end);
    else if (TAKE("--timeout")) a->timeout_s = strtod(v, &end);
    else if (TAKE("--csv")) a->csv = v;
    else if (TAKE("--timeline")) a->timeline = v;
    else if (TAKE("--comm-group")) a->comm_group = v;
    else if (TAKE("--deps")) {
      if (!strcmp(v, "data")) a->deps = ETSIM_REPLAY_DEPS_DATA;
      else if (!strcmp(v, "ctrl")) a->deps = ETSIM_REPLAY_DEPS_CTRL;
      else if (!strcmp(v, "all")) a->deps = ETSIM_REPLAY_DEPS_DATA | ETSIM_REPLAY_DEPS_CTRL;
      else {
        if (rank == 0)
          fprintf(stderr,
                  "etsim: --deps: expected data, ctrl or all, got "
                  "'%s'\n",
                  v);
        return 2;
      }
    } else if (s[0] == '-' && s[1]) {
      if (missing) return 2;
      if (rank == 0) fprintf(stderr, "etsim: unknown option '%s' (see --help)\n", s);
      return 2;
    } else if (!a->prefix) a->prefix = s;
    else {
      if (rank == 0) fprintf(stderr, "etsim: one PREFIX expected, got '%s' too\n", s);
      return 2;
    }
    if (end && *end) {
      if (rank == 0) fprintf(stderr, "etsim: %s: bad number '%s'\n", s, v);
      return 2;
    }
#undef TAKE
  }
  if (!a->prefix) {
    if (rank == 0) fputs(usage, stderr);
    return 2;
  }
  if (a->iterations < 1 || a->warmup < 0 || !(a->compute_scale > 0) || !(a->comm_scale > 0) ||
      !(a->timeout_s > 0)) {
    if (rank == 0)
      fprintf(stderr,
              "etsim: --iterations must be >= 1, --warmup >= 0, "
              "scales and --timeout > 0\n");
    return 2;
  }
  return 0;
}

/* Every rank learns whether any rank failed; failing ranks print first. */
static int agree(int rc, const etsim_error_t *err) {
  if (rc) fprintf(stderr, "etsim: %s\n", err->msg[0] ? err->msg : etsim_strerror(rc));
  int local = rc ? 1 : 0, any = 0;
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

/* Same collectives in the same order with the same sizes on every member of
 * each communicator, compared against the member with group rank 0. */
static int check_coll_order(run_t *R, commctx_t *c, int group, etsim_error_t *err) {
  const etsim_replay_plan_t *p = R->plan;
  long n = 0;
  for (size_t i = 0; i < p->n_ops; i++)
    n += p->ops[i].kind == ETSIM_REPLAY_COLL && p->ops[i].group == group;
  long n0 = n;
  MPI_Bcast(&n0, 1, MPI_LONG, 0, c->comm);
  int64_t *seq = etsim_calloc((size_t)(n0 > n ? n0 : n) * 4 + 1, sizeof *seq);
  int64_t *mine = etsim_calloc((size_t)n * 4 + 1, sizeof *mine);
  uint32_t *which = etsim_calloc((size_t)n + 1, sizeof *which);
  int rc = 0;
  if (!seq || !mine || !which) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    n0 = 0; /* still take part in the broadcast below */
  }
  long k = 0;
  for (size_t i = 0; !rc && i < p->n_ops; i++)
    if (p->ops[i].kind == ETSIM_REPLAY_COLL && p->ops[i].group == group) {
      mine[4 * k] = p->ops[i].coll;
      mine[4 * k + 1] = (int64_t)p->ops[i].bytes;
      mine[4 * k + 2] = p->ops[i].peer;
      mine[4 * k + 3] = p->ops[i].n_split != 0;
      which[k++] = (uint32_t)i;
    }
  if (c->me == 0 && !rc) memcpy(seq, mine, (size_t)n * 4 * sizeof *seq);
  if (seq) MPI_Bcast(seq, (int)(n0 * 4), MPI_INT64_T, 0, c->comm);
  const char *pg = group >= 0 ? R->groups.g[group].name : "(all ranks)";
  for (long j = 0; !rc && j < n && j < n0; j++)
    if (memcmp(&seq[4 * j], &mine[4 * j], 4 * sizeof *seq)) {
      const etsim_replay_op_t *op = &p->ops[which[j]];
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: node %llu (%s): collective #%ld on process group %s is %s%s of "
                           "%lld B (root %lld) on rank %d but %s%s of %lld B (root %lld) on "
                           "rank %d: the ranks would deadlock",
                           p->trace->path, (unsigned long long)op->id, op->name, j + 1, pg,
                           etsim_coll_type_name((int)mine[4 * j]),
                           mine[4 * j + 3] ? " (uneven)" : "", (long long)mine[4 * j + 1],
                           (long long)mine[4 * j + 2], R->rank,
                           etsim_coll_type_name((int)seq[4 * j]), seq[4 * j + 3] ? " (uneven)" : "",
                           (long long)seq[4 * j + 1], (long long)seq[4 * j + 2], member(c, 0));
    }
  if (!rc && n != n0)
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: rank %d has %ld collective(s) on process group "
                         "%s but rank %d has %ld",
                         p->trace->path, R->rank, n, pg, member(c, 0), n0);
  etsim_free(seq);
  etsim_free(mine);
  etsim_free(which);
  return rc;
}

/* Uneven all-to-alls: what each member sends this rank (its in_split entry
 * for us) must be what our out_split expects.  Runs after the sequence
 * check, so every member makes the same MPI_Alltoall calls. */
static int check_splits(run_t *R, commctx_t *c, int group, etsim_error_t *err) {
  const etsim_replay_plan_t *p = R->plan;
  int P = c->size, rc = 0;
  int64_t *got = etsim_calloc((size_t)P, sizeof *got);
  if (!got) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t i = 0; i < p->n_ops; i++) {
    const etsim_replay_op_t *op = &p->ops[i];
    if (op->kind != ETSIM_REPLAY_COLL || op->group != group || !op->n_split) continue;
    const int64_t *sp = p->splits + op->split_off;
    MPI_Alltoall(sp, 1, MPI_INT64_T, got, 1, MPI_INT64_T, c->comm);
    for (int j = 0; j < P && !rc; j++)
      if (got[j] != sp[P + j])
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: node %llu (%s): all-to-all: rank %d sends %lld B to rank %d "
                             "but out_split[%d] expects %lld B",
                             p->trace->path, (unsigned long long)op->id, op->name, member(c, j),
                             (long long)got[j], R->rank, j, (long long)sp[P + j]);
  }
  etsim_free(got);
  return rc;
}

/* Every send matched by a receive: per peer, the count and an
 * order-independent hash of (tag, size) of the messages. */
static int check_p2p(run_t *R, etsim_error_t *err) {
  const etsim_replay_plan_t *p = R->plan;
  int W = R->world;
  uint64_t *snd = etsim_calloc((size_t)W * 2, sizeof *snd);
  uint64_t *rcv = etsim_calloc((size_t)W * 2, sizeof *rcv);
  uint64_t *got = etsim_calloc((size_t)W * 2, sizeof *got);
  int rc = 0;
  if (!snd || !rcv || !got) {
    etsim_free(snd), etsim_free(rcv), etsim_free(got);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < p->n_ops; i++) {
    const etsim_replay_op_t *op = &p->ops[i];
    if (op->kind != ETSIM_REPLAY_SEND && op->kind != ETSIM_REPLAY_RECV) continue;
    uint64_t *t = op->kind == ETSIM_REPLAY_SEND ? snd : rcv;
    t[2 * op->peer]++;
    t[2 * op->peer + 1] += etsim_hash_u64(((uint64_t)op->tag << 48) ^ op->bytes);
  }
  MPI_Alltoall(snd, 2, MPI_UINT64_T, got, 2, MPI_UINT64_T, MPI_COMM_WORLD);
  for (int q = 0; q < W && !rc; q++)
    if (got[2 * q] != rcv[2 * q] || got[2 * q + 1] != rcv[2 * q + 1])
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: rank %d posts %llu receive(s) from rank %d, which sends it "
                           "%llu message(s)%s: a send without a matching receive (or the "
                           "reverse)",
                           p->trace->path, R->rank, (unsigned long long)rcv[2 * q], q,
                           (unsigned long long)got[2 * q],
                           got[2 * q] == rcv[2 * q] ? " with different tags or sizes" : "");
  etsim_free(snd), etsim_free(rcv), etsim_free(got);
  return rc;
}

static int setup_buffers(run_t *R, etsim_error_t *err) {
  const etsim_replay_plan_t *p = R->plan;
  size_t n = p->n_ops ? p->n_ops : 1;
  R->sbuf = etsim_calloc(n, sizeof *R->sbuf);
  R->rbuf = etsim_calloc(n, sizeof *R->rbuf);
  R->sbytes = etsim_calloc(n, sizeof *R->sbytes);
  R->rbytes = etsim_calloc(n, sizeof *R->rbytes);
  R->root_g = etsim_calloc(n, sizeof *R->root_g);
  R->v_counts = etsim_calloc(n, sizeof *R->v_counts);
  R->check = etsim_calloc(n, sizeof *R->check);
  R->seq_k = etsim_calloc(n, sizeof *R->seq_k);
  R->req = etsim_calloc(n, sizeof *R->req);
  R->pre = etsim_calloc(n, sizeof *R->pre);
  R->done_q = etsim_calloc(n, sizeof *R->done_q);
  R->done_t = etsim_calloc(n, sizeof *R->done_t);
  R->req_op = etsim_calloc(n, sizeof *R->req_op);
  R->idx = etsim_calloc(n, sizeof *R->idx);
  R->st = etsim_calloc(n, sizeof *R->st);
  R->p2p_count = etsim_calloc(n, sizeof *R->p2p_count);
  etsim_u64map_init(&R->p2p_key);
  if (!R->sbuf || !R->rbuf || !R->sbytes || !R->rbytes || !R->root_g || !R->v_counts || !R->check ||
      !R->seq_k || !R->req || !R->pre || !R->done_q || !R->done_t || !R->req_op || !R->idx ||
      !R->st || !R->p2p_count)
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  int64_t gmax_a = 1, gmax_b = 1, gmax_c = 1;
  uint64_t smax = 12;
  etsim_rng_t rng;
  etsim_rng_seed(&rng, 0x5eed0000u + (uint64_t)R->rank);
  for (size_t i = 0; i < p->n_ops; i++) {
    const etsim_replay_op_t *op = &p->ops[i];
    if (op->kind == ETSIM_REPLAY_GEMM) {
      if (op->m * op->k > gmax_a) gmax_a = op->m * op->k;
      if (op->k * op->n > gmax_b) gmax_b = op->k * op->n;
      if (op->m * op->n > gmax_c) gmax_c = op->m * op->n;
      if (op->m > INT32_MAX || op->n > INT32_MAX || op->k > INT32_MAX)
        return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                               "%s: node %llu: GEMM too large (use "
                               "--compute-scale)",
                               p->trace->path, (unsigned long long)op->id);
    } else if (op->kind == ETSIM_REPLAY_STREAM && op->bytes > smax) {
      smax = op->bytes;
    }
    if (!etsim_replay_kind_is_comm(op->kind)) continue;
    const commctx_t *c = op->group >= 0 ? &R->ctx[op->group] : &R->world_ctx;
    if (op->kind == ETSIM_REPLAY_SEND) {
      R->sbytes[i] = op->bytes;
    } else if (op->kind == ETSIM_REPLAY_RECV) {
      R->rbytes[i] = op->bytes;
    } else {
      int root = 0;
      if (op->peer >= 0)
        for (int g = 0; g < c->size; g++)
          if (member(c, g) == op->peer) root = g;
      R->root_g[i] = root;
      etsim_replay_coll_bytes(op->coll, op->bytes, c->size, c->me, root, &R->sbytes[i],
                              &R->rbytes[i]);
      if (op->n_split) {
        int P = c->size;
        int *v = R->v_counts[i] = etsim_calloc(4 * (size_t)P, sizeof *v);
        if (!v) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        const int64_t *sp = p->splits + op->split_off;
        uint64_t so = 0, ro = 0;
        for (int j = 0; j < P; j++) {
          if (sp[j] > INT32_MAX || sp[P + j] > INT32_MAX || so + (uint64_t)sp[j] > INT32_MAX ||
              ro + (uint64_t)sp[P + j] > INT32_MAX)
            return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                                   "%s: node %llu: all-to-all splits too "
                                   "large for one MPI call (use --comm-scale)",
                                   p->trace->path, (unsigned long long)op->id);
          v[j] = (int)sp[j], v[P + j] = (int)so, so += (uint64_t)sp[j];
          v[2 * P + j] = (int)sp[P + j], v[3 * P + j] = (int)ro;
          ro += (uint64_t)sp[P + j];
        }
        R->sbytes[i] = so, R->rbytes[i] = ro;
      }
    }
    if (R->sbytes[i] > (uint64_t)INT32_MAX || R->rbytes[i] > (uint64_t)INT32_MAX)
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s: node %llu: %llu B is more than one MPI call "
                             "moves here (use --comm-scale)",
                             p->trace->path, (unsigned long long)op->id,
                             (unsigned long long)op->bytes);
    R->sbuf[i] = etsim_calloc(1, R->sbytes[i] + 8);
    R->rbuf[i] = etsim_calloc(1, R->rbytes[i] + 8);
    if (!R->sbuf[i] || !R->rbuf[i])
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory for communication buffers",
                             p->trace->path);
    /* Touch every page now: first-touch faults would otherwise land in the
     * first iteration's communication times (about 15 us a page here). */
    /* Seeded floats in [1, 2): no denormals or NaNs slow the reductions. */
    uint8_t *sb = R->sbuf[i];
    for (uint64_t b = 0; b < R->sbytes[i]; b += 4) {
      float f = 1.0f + (float)(etsim_rng_next(&rng) >> 40) * 0x1p-24f;
      memcpy(sb + b, &f, R->sbytes[i] - b < 4 ? R->sbytes[i] - b : 4);
    }
    memset(R->rbuf[i], 0xff, R->rbytes[i]);
    if (op->kind == ETSIM_REPLAY_SEND || op->kind == ETSIM_REPLAY_RECV) {
      uint64_t key = ((uint64_t)(unsigned)op->peer << 17) | ((uint64_t)op->tag << 1) |
                     (uint64_t)(op->kind == ETSIM_REPLAY_SEND);
      if (etsim_u64map_put(&R->p2p_key, key, (uint32_t)R->n_p2p, NULL) == 1) R->n_p2p++;
    }
  }
  R->ga = etsim_malloc((size_t)gmax_a * sizeof(float));
  R->gb = etsim_malloc((size_t)gmax_b * sizeof(float));
  R->gc = etsim_malloc((size_t)gmax_c * sizeof(float));
  size_t sf = (size_t)(smax / 12);
  R->sa = etsim_malloc(sf * sizeof(float));
  R->sb = etsim_malloc(sf * sizeof(float));
  R->sc = etsim_malloc(sf * sizeof(float));
  if (!R->ga || !R->gb || !R->gc || !R->sa || !R->sb || !R->sc)
    return etsim_error_set(err, ETSIM_ENOMEM,
                           "%s: out of memory for compute buffers (use "
                           "--compute-scale)",
                           p->trace->path);
  for (int64_t i = 0; i < gmax_a; i++) R->ga[i] = (float)etsim_rng_uniform(&rng);
  for (int64_t i = 0; i < gmax_b; i++) R->gb[i] = (float)etsim_rng_uniform(&rng);
  for (size_t i = 0; i < sf; i++) {
    R->sb[i] = (float)etsim_rng_uniform(&rng);
    R->sc[i] = (float)etsim_rng_uniform(&rng);
  }
  return 0;
}

static void free_run(run_t *R) {
  if (R->plan) {
    for (size_t i = 0; i < R->plan->n_ops; i++) {
      if (R->sbuf) etsim_free(R->sbuf[i]);
      if (R->rbuf) etsim_free(R->rbuf[i]);
    }
  }
  if (R->plan && R->v_counts)
    for (size_t i = 0; i < R->plan->n_ops; i++) etsim_free(R->v_counts[i]);
  etsim_free(R->v_counts);
  etsim_free(R->sbuf), etsim_free(R->rbuf), etsim_free(R->sbytes);
  etsim_free(R->rbytes), etsim_free(R->root_g), etsim_free(R->check);
  etsim_free(R->seq_k), etsim_free(R->req), etsim_free(R->req_op);
  etsim_free(R->pre), etsim_free(R->done_q), etsim_free(R->done_t);
  etsim_free(R->idx), etsim_free(R->st), etsim_free(R->p2p_count);
  etsim_u64map_free(&R->p2p_key);
  etsim_free(R->ga), etsim_free(R->gb), etsim_free(R->gc);
  etsim_free(R->sa), etsim_free(R->sb), etsim_free(R->sc);
  if (R->ctx) {
    for (size_t g = 0; g < R->groups.n; g++)
      if (R->ctx[g].comm != MPI_COMM_NULL) MPI_Comm_free(&R->ctx[g].comm);
    etsim_free(R->ctx);
  }
  etsim_replay_groups_free(&R->groups);
}

/* ------------------------------------------------------------ report */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  int world, iterations, warmup;
  int64_t iter_med_ns, iter_min_ns, iter_max_ns;
  int64_t rec_span_ns, dry_ns, crit_ns;
  size_t n_nodes, n_unmapped, n_dangling;
  double ridge, gemm_rate, stream_rate;
} summary_t;

static int write_csv(const char *path, const rec_t *r, size_t n, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *fp = o.fp;
  fprintf(fp,
          "rank,id,name,kind,coll,peer,tag,send_bytes,recv_bytes,flops,"
          "recorded_us,measured_us,start_us,end_us,check\n");
  for (size_t i = 0; i < n; i++) {
    char name[64];
    size_t k = 0;
    for (const char *s = r[i].name; *s && k < sizeof name - 1; s++)
      name[k++] = (*s == ',' || *s == '"' || *s == '\n') ? '_' : *s;
    name[k] = 0;
    fprintf(fp, "%d,%llu,%s,%s,%s,%d,%d,%llu,%llu,%.0f,%.3f,%.3f,%.3f,%.3f,%s\n", r[i].rank,
            (unsigned long long)r[i].id, name, etsim_replay_kind_name(r[i].kind),
            r[i].kind == ETSIM_REPLAY_COLL ? etsim_coll_type_name(r[i].coll) : "", r[i].peer,
            r[i].tag, (unsigned long long)r[i].send_bytes, (unsigned long long)r[i].recv_bytes,
            r[i].flops, (double)r[i].rec_ns / 1e3, (double)r[i].mean_ns / 1e3,
            (double)r[i].start_ns / 1e3, (double)r[i].end_ns / 1e3,
            r[i].check == 1   ? "ok"
            : r[i].check == 2 ? "MISMATCH"
                              : "-");
  }
  return etsim_outfile_commit(&o, err);
}

static int write_timeline(const char *path, const rec_t *r, size_t n, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *fp = o.fp;
  fprintf(fp, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  for (size_t i = 0; i < n; i++) {
    json_t *nm = json_string(r[i].name);
    char *s = nm ? json_dumps(nm, JSON_ENCODE_ANY) : NULL;
    fprintf(fp,
            "%s{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
            "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"id\":%llu,\"recorded_us\":"
            "%.3f}}\n",
            i ? "," : "", s ? s : "\"?\"", etsim_replay_cat_name(etsim_replay_kind_cat(r[i].kind)),
            r[i].rank, etsim_replay_kind_is_comm(r[i].kind) ? 1 : 0, (double)r[i].start_ns / 1e3,
            (double)(r[i].end_ns - r[i].start_ns) / 1e3, (unsigned long long)r[i].id,
            (double)r[i].rec_ns / 1e3);
    free(s);
    json_decref(nm);
  }
  fprintf(fp, "]}\n");
  return etsim_outfile_commit(&o, err);
}

/* The sums the report is made of. */
typedef struct {
  double cat_m[ETSIM_REPLAY_CAT_COUNT], cat_r[ETSIM_REPLAY_CAT_COUNT];
  double rec_total, rec_mapped;
  size_t mapped, checked, bad;
  etsim_replay_fidelity_t f;
  int use_span;    /* the recorded span is the reference, not the dry run */
  double recorded; /* the reference iteration time */
  double err_it;   /* the measured median's error against it */
} tally_t;

static int tally(const args_t *a, const summary_t *S, const rec_t *r, size_t n, tally_t *t) {
  double *rec = etsim_calloc(n + 1, sizeof *rec);
  double *mea = etsim_calloc(n + 1, sizeof *mea);
  if (!rec || !mea) {
    etsim_free(rec), etsim_free(mea);
    return ETSIM_ENOMEM;
  }
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < n; i++) {
    rec[i] = (double)r[i].rec_ns;
    mea[i] = (double)r[i].mean_ns;
    int c = etsim_replay_kind_cat(r[i].kind);
    t->cat_m[c] += (double)r[i].mean_ns;
    t->cat_r[c] += (double)r[i].rec_ns;
    t->rec_total += (double)r[i].rec_ns;
    if (r[i].mapped) {
      t->mapped++;
      t->rec_mapped += (double)r[i].rec_ns;
    }
    t->checked += r[i].check != 0;
    t->bad += r[i].check == 2;
  }
  etsim_replay_fidelity(rec, mea, n, &t->f);
  /* The recorded span is only comparable when nothing was scaled. */
  t->use_span = S->rec_span_ns && a->compute_scale == 1.0 && a->comm_scale == 1.0;
  t->recorded = t->use_span ? (double)S->rec_span_ns : (double)S->dry_ns;
  t->err_it = t->recorded > 0 ? ((double)S->iter_med_ns - t->recorded) / t->recorded : 0;
  etsim_free(rec), etsim_free(mea);
  return 0;
}

static json_t *coverage_json(const rec_t *r, size_t n, const tally_t *t) {
  json_t *cov = json_object();
  json_object_set_new(cov, "nodes_mapped", json_integer((json_int_t)t->mapped));
  json_object_set_new(cov, "nodes", json_integer((json_int_t)n));
  json_object_set_new(cov, "recorded_time_mapped",
                      json_real(t->rec_total > 0 ? t->rec_mapped / t->rec_total : 1.0));
  json_t *um = json_array();
  for (size_t i = 0; i < n; i++)
    if (!r[i].mapped) {
      json_t *o = json_object();
      json_object_set_new(o, "rank", json_integer(r[i].rank));
      json_object_set_new(o, "id", json_integer((json_int_t)r[i].id));
      json_object_set_new(o, "name", json_string(r[i].name));
      json_array_append_new(um, o);
    }
  json_object_set_new(cov, "unmapped", um);
  return cov;
}

/* Every communication node with its nccl-tests bus bandwidth. */
static json_t *comm_json(const rec_t *r, size_t n) {
  json_t *colls = json_array();
  for (size_t i = 0; i < n; i++) {
    if (!etsim_replay_kind_is_comm(r[i].kind)) continue;
    int coll = r[i].kind == ETSIM_REPLAY_COLL ? r[i].coll : -1;
    uint64_t S_b = r[i].kind == ETSIM_REPLAY_SEND   ? r[i].send_bytes
                   : r[i].kind == ETSIM_REPLAY_RECV ? r[i].recv_bytes
                                                    : 0;
    if (coll >= 0) {
      /* nccl-tests size: the larger of the two buffers. */
      S_b = r[i].send_bytes > r[i].recv_bytes ? r[i].send_bytes : r[i].recv_bytes;
      if (coll == ETSIM_COLL_REDUCE || coll == ETSIM_COLL_GATHER)
        S_b = r[i].send_bytes * (coll == ETSIM_COLL_GATHER ? (uint64_t)r[i].group_size : 1);
      if (coll == ETSIM_COLL_SCATTER) S_b = r[i].recv_bytes * (uint64_t)r[i].group_size;
    }
    double t = (double)r[i].mean_ns * 1e-9;
    double algbw = t > 0 ? (double)S_b / t / 1e9 : 0;
    double fac = coll >= 0 ? etsim_replay_busbw_factor(coll, r[i].group_size) : 1.0;
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(r[i].rank));
    json_object_set_new(o, "id", json_integer((json_int_t)r[i].id));
    json_object_set_new(
        o, "type",
        json_string(coll >= 0 ? etsim_coll_type_name(coll) : etsim_replay_kind_name(r[i].kind)));
    json_object_set_new(o, "bytes", json_integer((json_int_t)S_b));
    json_object_set_new(o, "ranks", json_integer(r[i].group_size));
    json_object_set_new(o, "measured_us", json_real((double)r[i].mean_ns / 1e3));
    json_object_set_new(o, "recorded_us", json_real((double)r[i].rec_ns / 1e3));
    json_object_set_new(o, "algbw_gbps", json_real(algbw));
    json_object_set_new(o, "busbw_gbps", json_real(algbw * fac));
    json_array_append_new(colls, o);
  }
  return colls;
}

/* The whole report as JSON; its "communication" array is also what the
 * text report lists. */
static json_t *report_json(const args_t *a, const summary_t *S, const rec_t *r, size_t n,
                           const tally_t *t) {
  json_t *j = json_object();
  json_object_set_new(j, "prefix", json_string(a->prefix));
  json_object_set_new(j, "ranks", json_integer(S->world));
  json_object_set_new(j, "nodes", json_integer((json_int_t)n));
  json_object_set_new(j, "iterations", json_integer(S->iterations));
  json_object_set_new(j, "warmup", json_integer(S->warmup));
  json_t *it = json_object();
  json_object_set_new(it, "measured_median_us", json_real((double)S->iter_med_ns / 1e3));
  json_object_set_new(it, "measured_min_us", json_real((double)S->iter_min_ns / 1e3));
  json_object_set_new(it, "measured_max_us", json_real((double)S->iter_max_ns / 1e3));
  json_object_set_new(it, "recorded_span_us", json_real((double)S->rec_span_ns / 1e3));
  json_object_set_new(it, "dry_run_us", json_real((double)S->dry_ns / 1e3));
  json_object_set_new(it, "critical_path_us", json_real((double)S->crit_ns / 1e3));
  json_object_set_new(it, "relative_error", json_real(t->err_it));
  json_object_set_new(j, "iteration", it);
  json_t *pn = json_object();
  json_object_set_new(pn, "compared", json_integer((json_int_t)t->f.n));
  json_object_set_new(pn, "mdape", json_real(t->f.mdape));
  json_object_set_new(pn, "weighted_error", json_real(t->f.wape));
  json_object_set_new(pn, "spearman", json_real(t->f.spearman));
  json_object_set_new(pn, "within10", json_real(t->f.within10));
  json_object_set_new(pn, "within25", json_real(t->f.within25));
  json_object_set_new(j, "per_node", pn);
  json_t *cats = json_object();
  for (int c = 0; c < ETSIM_REPLAY_CAT_COUNT; c++) {
    json_t *o = json_object();
    json_object_set_new(o, "measured_us", json_real(t->cat_m[c] / 1e3));
    json_object_set_new(o, "recorded_us", json_real(t->cat_r[c] / 1e3));
    json_object_set_new(cats, etsim_replay_cat_name(c), o);
  }
  json_object_set_new(j, "categories", cats);
  json_object_set_new(j, "coverage", coverage_json(r, n, t));
  json_object_set_new(j, "communication", comm_json(r, n));
  json_t *ck = json_object();
  json_object_set_new(ck, "enabled", json_boolean(a->check));
  json_object_set_new(ck, "verified", json_integer((json_int_t)t->checked));
  json_object_set_new(ck, "mismatches", json_integer((json_int_t)t->bad));
  json_object_set_new(j, "check", ck);
  json_t *mc = json_object();
  json_object_set_new(mc, "ridge_flop_per_byte", json_real(S->ridge));
  json_object_set_new(mc, "gemm_gflops", json_real(S->gemm_rate / 1e9));
  json_object_set_new(mc, "stream_gbps", json_real(S->stream_rate / 1e9));
  json_object_set_new(j, "machine", mc);
  return j;
}

static void print_text(const args_t *a, const summary_t *S, size_t n, const tally_t *t,
                       const json_t *colls) {
  printf(
      "replay %s: %d rank(s), %zu node(s), %d timed iteration(s) after %d "
      "warm-up\n",
      a->prefix, S->world, n, S->iterations, S->warmup);
  char errs[64];
  if (t->recorded > 0) snprintf(errs, sizeof errs, "error %+.1f%%", 100 * t->err_it);
  else snprintf(errs, sizeof errs, "no recorded time to compare");
  printf(
      "iteration: measured %.3f us (median; min %.3f, max %.3f), recorded "
      "%.3f us%s, dry run %.3f us, critical path %.3f us: %s\n",
      (double)S->iter_med_ns / 1e3, (double)S->iter_min_ns / 1e3, (double)S->iter_max_ns / 1e3,
      t->recorded / 1e3, t->use_span ? " (span)" : " (dry run)", (double)S->dry_ns / 1e3,
      (double)S->crit_ns / 1e3, errs);
  const etsim_replay_fidelity_t *f = &t->f;
  if (f->n)
    printf(
        "per node (%zu with a recorded time): MdAPE %.1f%%, weighted "
        "error %.1f%%, Spearman %.3f, within 10%% %.0f%%, within 25%% "
        "%.0f%%\n",
        f->n, 100 * f->mdape, 100 * f->wape, f->spearman, 100 * f->within10, 100 * f->within25);
  else printf("per node: no node has a recorded duration\n");
  printf("%-8s %14s %14s\n", "category", "measured_us", "recorded_us");
  for (int c = 0; c < ETSIM_REPLAY_CAT_COUNT; c++)
    if (t->cat_m[c] > 0 || t->cat_r[c] > 0)
      printf("%-8s %14.3f %14.3f\n", etsim_replay_cat_name(c), t->cat_m[c] / 1e3,
             t->cat_r[c] / 1e3);
  printf("coverage: %zu/%zu node(s) mapped, %.1f%% of recorded time\n", t->mapped, n,
         t->rec_total > 0 ? 100 * t->rec_mapped / t->rec_total : 100.0);
  size_t shown = 0;
  json_t *o;
  size_t k;
  json_array_foreach(colls, k, o) {
    if (shown++ == 16) {
      printf("  ... (%zu communication nodes in all; see --json)\n", json_array_size(colls));
      break;
    }
    printf(
        "  rank %lld node %lld %-14s %10lld B %10.3f us  algbw %.3f GB/s "
        "busbw %.3f GB/s\n",
        (long long)json_integer_value(json_object_get(o, "rank")),
        (long long)json_integer_value(json_object_get(o, "id")),
        json_string_value(json_object_get(o, "type")),
        (long long)json_integer_value(json_object_get(o, "bytes")),
        json_real_value(json_object_get(o, "measured_us")),
        json_real_value(json_object_get(o, "algbw_gbps")),
        json_real_value(json_object_get(o, "busbw_gbps")));
  }
  if (a->check)
    printf("check: %zu communication node(s) verified, %zu mismatch(es)\n", t->checked, t->bad);
}

/* Rank 0's report of the gathered records: JSON, text or nothing.
 * Returns 1 when a received buffer failed the check. */
static int report(const args_t *a, const summary_t *S, const rec_t *r, size_t n) {
  tally_t t;
  if (tally(a, S, r, n, &t)) return ETSIM_ENOMEM;
  json_t *j = report_json(a, S, r, n, &t);
  if (a->json) {
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    if (s) puts(s);
    free(s);
  } else if (!a->quiet) {
    print_text(a, S, n, &t, json_object_get(j, "communication"));
  }
  json_decref(j);
  return t.bad ? 1 : 0;
}

/* ------------------------------------------------------------ main */

/* The trace set as resolved and this rank's trace as loaded. */
typedef struct {
  etsim_et_trace_t *trace;
  char **paths;
  size_t n_paths, n_ranks;
  uint32_t *rank_file;
} input_t;

/* What the replay measured on this rank. */
typedef struct {
  etsim_replay_sched_t sch;
  int64_t dry, crit; /* dry run and critical path of the recorded times */
  int64_t *sum;      /* per op: its time summed over the timed iterations */
  int64_t *iters;    /* per timed iteration: its makespan */
  size_t bad_local;  /* received buffers that failed the check */
} timing_t;

/* 1-3. The trace set (exactly `world` ranks), the machine balance and this
 * rank's plan.  Returns 0, or 2 on every rank when any rank failed. */
static int load_input(run_t *R, input_t *in, summary_t *S, etsim_error_t *err) {
  const args_t *a = R->a;
  int rank = R->rank, world = R->world;
  int rc =
      etsim_et_set_resolve(a->prefix, &in->paths, &in->n_paths, &in->rank_file, &in->n_ranks, err);
  if (!rc && in->n_ranks != (size_t)world)
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: the trace set has %zu rank(s) but mpirun started "
                         "%d%s",
                         a->prefix, in->n_ranks, world,
                         in->n_ranks < (size_t)world ? " (a rank's file is missing)" : "");
  if (agree(rank == 0 ? rc : 0, err)) return 2;
  /* Machine balance: measured once on rank 0 so every rank maps alike. */
  double mach[3] = {0, 0, a->ridge};
  if (rank == 0) {
    etsim_replay_machine_t m;
    if (etsim_replay_calibrate(&m) == 0) {
      mach[0] = m.gemm_flops_per_s, mach[1] = m.stream_bytes_per_s;
      if (a->ridge < 0) mach[2] = m.ridge_flop_per_byte;
    }
  }
  MPI_Bcast(mach, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  S->gemm_rate = mach[0], S->stream_rate = mach[1], S->ridge = mach[2];
  /* Load, groups, plan. */
  rc = etsim_et_trace_load(&in->trace, in->paths[in->rank_file[rank]], 0, err);
  if (!rc && a->comm_group) rc = etsim_replay_groups_load(&R->groups, a->comm_group, world, err);
  if (!rc) {
    etsim_replay_opts_t o;
    etsim_replay_opts_init(&o);
    o.rank = rank, o.world = world;
    o.compute_scale = a->compute_scale, o.comm_scale = a->comm_scale;
    o.ridge_flop_per_byte = S->ridge;
    o.groups = a->comm_group ? &R->groups : NULL;
    o.deps = a->deps;
    rc = etsim_replay_plan_build(&R->plan, in->trace, &o, err);
  }
  return agree(rc, err) ? 2 : 0;
}

/* 4. Communicators, one MPI_Comm_split per group in file order (every
 * rank read the same file, so all take part in the same splits). */
static int split_comms(run_t *R) {
  R->ctx = etsim_calloc(R->groups.n + 1, sizeof *R->ctx);
  if (!R->ctx) return 3;
  for (size_t g = 0; g < R->groups.n; g++) {
    const etsim_replay_group_t *gr = &R->groups.g[g];
    int pos = -1;
    for (size_t r = 0; r < gr->n_ranks; r++)
      if (gr->ranks[r] == R->rank) pos = (int)r;
    R->ctx[g].comm = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, pos >= 0 ? 0 : MPI_UNDEFINED, pos, &R->ctx[g].comm);
    R->ctx[g].size = (int)gr->n_ranks;
    R->ctx[g].me = pos;
    R->ctx[g].members = gr->ranks;
  }
  return 0;
}

/* check() on all ranks, then on every group this rank is in; the first
 * failure's message is kept. */
static int check_comms(run_t *R, int (*check)(run_t *, commctx_t *, int, etsim_error_t *),
                       etsim_error_t *err) {
  int rc = check(R, &R->world_ctx, -1, err);
  for (size_t g = 0; g < R->groups.n; g++)
    if (R->ctx[g].comm != MPI_COMM_NULL) {
      etsim_error_t e2 = {0};
      int r2 = check(R, &R->ctx[g], (int)g, &e2);
      if (r2 && !rc) rc = r2, *err = e2;
    }
  return rc;
}

/* 5. Cross-rank checks before anything runs, then the buffers.  Returns
 * 0, 2 (bad input) or 3 (out of memory), the same on every rank. */
static int check_plan(run_t *R, etsim_error_t *err) {
  if (agree(check_comms(R, check_coll_order, err), err)) return 2;
  if (agree(check_comms(R, check_splits, err), err)) return 2;
  if (agree(check_p2p(R, err), err)) return 2;
  if (agree(setup_buffers(R, err), err)) return 3;
  return 0;
}

/* 6. Dry run and critical path of the recorded durations, and the sums
 * the timed iterations fill.  Returns 0 or 3; on 3 nothing is left to
 * free. */
static int prepare_timing(run_t *R, timing_t *t, etsim_error_t *err) {
  if (etsim_replay_sched_init(&t->sch, R->plan)) return 3;
  int rc = etsim_replay_dry_run(&t->sch, &t->dry, err);
  if (!rc) rc = etsim_replay_critical_path(R->plan, &t->crit, NULL, NULL);
  t->sum = etsim_calloc(R->plan->n_ops + 1, sizeof *t->sum);
  t->iters = etsim_calloc((size_t)R->a->iterations, sizeof *t->iters);
  if (!t->sum || !t->iters) rc = ETSIM_ENOMEM;
  if (agree(rc, err)) {
    etsim_free(t->sum), etsim_free(t->iters);
    etsim_replay_sched_free(&t->sch);
    return 3;
  }
  return 0;
}

/* 7. Warm-up and timed iterations, each between two barriers.  A trace
 * that cannot run aborts every rank. */
static void replay_iterations(run_t *R, timing_t *t, etsim_error_t *err) {
  const args_t *a = R->a;
  size_t n = R->plan->n_ops;
  etsim_replay_exec_t x = {R, x_now, x_run, x_start, x_poll};
  if (R->rank == 0 && a->progress) {
    fprintf(stderr, "etsim: replay %s: %d rank(s); %d warm-up and %d timed iteration(s)\n",
            a->prefix, R->world, a->warmup, a->iterations);
    fflush(stderr);
  }
  for (int it = 0; it < a->warmup + a->iterations; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t q = 0; q < R->n_p2p; q++) R->p2p_count[q] = 0;
    int64_t mk = 0;
    int rc = prepost(R, err);
    if (!rc) rc = etsim_replay_sched_run(&t->sch, &x, &mk, err);
    if (rc) {
      fprintf(stderr, "etsim: %s\n", err->msg);
      fflush(stderr);
      /* A trace that cannot run (a deadlock, bad input) is exit 2. */
      MPI_Abort(MPI_COMM_WORLD, rc == ETSIM_ENOMEM || rc == ETSIM_EINTERNAL ? 3 : 2);
    }
    if (R->rank == 0 && a->progress) {
      fprintf(stderr, "etsim: replay: %s %d of %d: %.3f ms on rank 0\n",
              it < a->warmup ? "warm-up" : "iteration",
              it < a->warmup ? it + 1 : it - a->warmup + 1,
              it < a->warmup ? a->warmup : a->iterations, (double)mk / 1e6);
      fflush(stderr);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (it >= a->warmup) {
      t->iters[it - a->warmup] = mk;
      for (size_t i = 0; i < n; i++) t->sum[i] += t->sch.end_ns[i] - t->sch.start_ns[i];
    }
    for (size_t i = 0; i < n; i++) t->bad_local += R->check[i] == 2;
  }
}

/* Out of memory in the middle of the gather: the other ranks wait in a
 * collective call, so the whole job ends here (exit 3, as an allocation
 * failure elsewhere) rather than one rank returning. */
static void *need(void *p, int rank, const char *what) {
  if (p) return p;
  fprintf(stderr, "etsim: replay: rank %d: out of memory for %s\n", rank, what);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  return NULL;
}

/* This rank's nodes as the records rank 0 gathers. */
static rec_t *make_recs(const run_t *R, const timing_t *t) {
  size_t n = R->plan->n_ops;
  rec_t *mine = need(etsim_calloc(n + 1, sizeof *mine), R->rank, "the node records");
  for (size_t i = 0; i < n; i++) {
    const etsim_replay_op_t *op = &R->plan->ops[i];
    rec_t *r = &mine[i];
    r->id = op->id;
    r->rank = R->rank;
    r->kind = op->kind;
    r->coll = op->coll;
    r->peer = op->peer;
    r->tag = op->tag;
    r->check = R->check[i];
    r->mapped = op->mapped;
    r->group_size = op->group >= 0 ? R->ctx[op->group].size : R->world;
    r->send_bytes = R->sbytes[i];
    r->recv_bytes = R->rbytes[i];
    if (op->kind == ETSIM_REPLAY_STREAM) r->send_bytes = op->bytes;
    r->flops = op->flops;
    r->rec_ns = op->rec_ns;
    r->mean_ns = t->sum[i] / R->a->iterations;
    r->start_ns = t->sch.start_ns[i];
    r->end_ns = t->sch.end_ns[i];
    snprintf(r->name, sizeof r->name, "%s", op->name);
  }
  return mine;
}

/* Rank 0: the iteration figures from the slowest rank's makespans, the
 * CSV and timeline files and the report.  Returns the exit status. */
static int finish(const args_t *a, summary_t *S, int64_t *iter_max, const int64_t glob[3],
                  const rec_t *all, size_t n_all) {
  int rc = 0;
  etsim_qsort(iter_max, (size_t)a->iterations, sizeof *iter_max, cmp_i64);
  S->iter_min_ns = iter_max[0];
  S->iter_max_ns = iter_max[a->iterations - 1];
  S->iter_med_ns = a->iterations % 2
                       ? iter_max[a->iterations / 2]
                       : (iter_max[a->iterations / 2 - 1] + iter_max[a->iterations / 2]) / 2;
  S->rec_span_ns = glob[0], S->dry_ns = glob[1], S->crit_ns = glob[2];
  S->n_nodes = n_all;
  etsim_error_t e2 = {0};
  if (a->csv && write_csv(a->csv, all, n_all, &e2)) {
    fprintf(stderr, "etsim: %s\n", e2.msg);
    rc = 2;
  }
  if (!rc && a->timeline && write_timeline(a->timeline, all, n_all, &e2)) {
    fprintf(stderr, "etsim: %s\n", e2.msg);
    rc = 2;
  }
  int r2 = report(a, S, all, n_all);
  if (!rc) rc = r2 < 0 ? 3 : r2;
  fflush(stdout);
  return rc;
}

/* 8. Gather every rank's records and figures on rank 0, which reports;
 * every rank returns rank 0's exit status. */
static int gather_report(const run_t *R, timing_t *t, summary_t *S) {
  const args_t *a = R->a;
  int rank = R->rank, world = R->world;
  size_t n = R->plan->n_ops;
  int64_t loc[3] = {R->plan->rec_span_ns, t->dry, t->crit}, glob[3];
  MPI_Reduce(loc, glob, 3, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  int64_t *iter_max =
      need(etsim_calloc((size_t)a->iterations, sizeof *iter_max), rank, "iteration times");
  MPI_Reduce(t->iters, iter_max, a->iterations, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  rec_t *mine = make_recs(R, t);
  int my_bytes = (int)(n * sizeof *mine);
  int *counts =
      rank == 0 ? need(etsim_calloc((size_t)world, sizeof *counts), rank, "the gather") : NULL;
  int *displs =
      rank == 0 ? need(etsim_calloc((size_t)world, sizeof *displs), rank, "the gather") : NULL;
  MPI_Gather(&my_bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  rec_t *all = NULL;
  size_t n_all = 0;
  if (rank == 0) {
    long total = 0;
    for (int q = 0; q < world; q++) displs[q] = (int)total, total += counts[q];
    n_all = (size_t)total / sizeof *all;
    all = need(etsim_calloc(n_all + 1, sizeof *all), rank, "every rank's records");
  }
  MPI_Gatherv(mine, my_bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  int rc = rank == 0 ? finish(a, S, iter_max, glob, all, n_all) : 0;
  if (t->bad_local)
    fprintf(stderr,
            "etsim: %s: rank %d: %zu received buffer(s) differ from "
            "what the senders sent\n",
            a->prefix, rank, t->bad_local);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  etsim_free(all), etsim_free(counts), etsim_free(displs), etsim_free(mine);
  etsim_free(iter_max);
  return rc;
}

static int replay_main(int argc, char **argv, int rank, int world) {
  args_t a;
  int prc = parse_args(argc, argv, &a, rank);
  if (prc) return prc == 1 ? 0 : 2;
  etsim_error_t err = {0};
  run_t R;
  memset(&R, 0, sizeof R);
  R.rank = rank, R.world = world, R.a = &a;
  R.corrupt = getenv("ETSIM_REPLAY_CORRUPT") != NULL;
  R.world_ctx.comm = MPI_COMM_WORLD;
  R.world_ctx.size = world;
  R.world_ctx.me = rank;
  input_t in = {0};
  summary_t S;
  memset(&S, 0, sizeof S);
  S.world = world, S.iterations = a.iterations, S.warmup = a.warmup;
  timing_t t;
  memset(&t, 0, sizeof t);
  int rc = load_input(&R, &in, &S, &err);
  if (!rc) rc = split_comms(&R);
  if (!rc) rc = check_plan(&R, &err);
  if (!rc) rc = prepare_timing(&R, &t, &err);
  if (!rc) {
    replay_iterations(&R, &t, &err);
    rc = gather_report(&R, &t, &S);
    etsim_free(t.sum), etsim_free(t.iters);
    etsim_replay_sched_free(&t.sch);
  }
  free_run(&R);
  etsim_replay_plan_free(R.plan);
  etsim_et_trace_free(in.trace);
  etsim_et_free_paths(in.paths, in.n_paths);
  etsim_free(in.rank_file);
  return rc;
}

int main(int argc, char **argv) {
  /* One BLAS thread per rank: ranks are the parallelism. */
  openblas_set_num_threads(1);
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    fprintf(stderr, "etsim: replay: MPI_Init failed\n");
    return 3;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  int rc = replay_main(argc, argv, rank, world);
  MPI_Finalize();
  return rc;
}

#else
/* Built into libetsim without MPI: nothing here. */
typedef int etsim_replay_mpi_runner_absent_t;
#endif

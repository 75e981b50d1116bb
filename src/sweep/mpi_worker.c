/*
 * mpi_worker.c — etsim-sweep, the MPI program behind `mpirun -np N etsim
 * sweep SPEC -o DIR` (the etsim binary does not link MPI: run under
 * mpirun, `etsim sweep` execs this program with its options spelled out).
 *
 * Every rank starts one executor (`etsim sweep --serve`, fork-then-exec)
 * and runs points through it.  Rank 0 also schedules: it hands each rank
 * its first point, and the next one whenever that rank's row comes back
 * (the scheduler keeps a rank on the trace set it generated, as in a local
 * sweep), writes the rows, and sends -1 to a rank when no point is left for
 * it.  Rank 0 polls its own executor and the other ranks in turn, sleeping
 * between polls, so it leaves the CPU to the executors.
 *
 * Only compiled into etsim-sweep (ETSIM_SWEEP_MPI); empty inside libetsim.
 */
#ifdef ETSIM_SWEEP_MPI

#include "etsim/sweep.h"

#include <mpi.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { TAG_WORK = 1, TAG_ROW = 2 };

typedef struct {
  const char *spec, *out, *etsim;
  double timeout;
  int restart, retry_failed, keep_traces, progress;
  unsigned long long limit;
} args_t;

static int parse(int argc, char **argv, args_t *a) {
  memset(a, 0, sizeof *a);
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--spec")) a->spec = v;
    else if (!strcmp(k, "--out")) a->out = v;
    else if (!strcmp(k, "--etsim")) a->etsim = v;
    else if (!strcmp(k, "--timeout")) a->timeout = atof(v);
    else if (!strcmp(k, "--restart")) a->restart = atoi(v);
    else if (!strcmp(k, "--retry-failed")) a->retry_failed = atoi(v);
    else if (!strcmp(k, "--keep-traces")) a->keep_traces = atoi(v);
    else if (!strcmp(k, "--progress")) a->progress = atoi(v);
    else if (!strcmp(k, "--limit")) a->limit = strtoull(v, NULL, 10);
    else return -1;
  }
  return a->spec && a->out && a->etsim ? 0 : -1;
}

static double cpu_now(void) {
  double s = 0;
  int who[2] = {RUSAGE_SELF, RUSAGE_CHILDREN};
  for (int i = 0; i < 2; i++) {
    struct rusage ru;
    if (getrusage(who[i], &ru)) continue;
    s += (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
  }
  return s;
}

static void nap_ms(int ms) {
  struct timespec t = {0, (long)ms * 1000000L};
  nanosleep(&t, NULL);
}

/* Wait for the executor's answer to the point sent ("<cpu> <row>"). */
static int await(etsim_sweep_proc_t *p, double timeout, char **msg, etsim_error_t *err) {
  for (;;) {
    char *row;
    double cpu;
    int got = etsim_sweep_proc_collect(p, timeout, &row, &cpu, err);
    if (got < 0) return got;
    if (got) {
      size_t n = strlen(row) + 40;
      *msg = malloc(n);
      if (!*msg) {
        etsim_free(row);
        return ETSIM_ENOMEM;
      }
      snprintf(*msg, n, "%.6f %s", cpu, row);
      etsim_free(row);
      return 0;
    }
    struct pollfd pf = {etsim_sweep_proc_fd(p), POLLIN, 0};
    poll(&pf, 1, 1000);
  }
}

static int row_point(const char *msg, long *point, double *cpu, const char **row) {
  char *end;
  *cpu = strtod(msg, &end);
  if (*end != ' ') return -1;
  *row = end + 1;
  const char *k = strstr(*row, "\"point\": ");
  if (!k) return -1;
  *point = strtol(k + 9, NULL, 10);
  return 0;
}

/* A rank other than 0: run the points rank 0 sends until it sends -1,
 * answering each with its row. */
static void serve_rank(etsim_sweep_proc_t *proc, double timeout, int rank) {
  etsim_error_t err = {0};
  int rc;
  for (;;) {
    long point;
    MPI_Recv(&point, 1, MPI_LONG, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (point < 0) break;
    char *msg = NULL;
    if ((rc = etsim_sweep_proc_send(proc, (size_t)point, &err)) ||
        (rc = await(proc, timeout, &msg, &err))) {
      fprintf(stderr, "etsim: rank %d: %s\n", rank, err.msg[0] ? err.msg : "out of memory");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Send(msg, (int)strlen(msg) + 1, MPI_CHAR, 0, TAG_ROW, MPI_COMM_WORLD);
    free(msg);
  }
}

/* Rank 0: hand out points as ranks free up (its own executor too), and
 * write the rows as they come back.  Aborts the job on an error. */
static void schedule(etsim_sweep_sched_t *s, etsim_sweep_proc_t *proc, int size, double timeout,
                     int progress) {
  etsim_error_t err = {0};
  int rc = 0;
  int live = size - 1, own_busy = 0;
  for (int r = 1; r < size; r++) {
    long p = etsim_sweep_sched_next(s, (size_t)r);
    MPI_Send(&p, 1, MPI_LONG, r, TAG_WORK, MPI_COMM_WORLD);
    if (p < 0) live--;
  }
  long own = etsim_sweep_sched_next(s, 0);
  if (own >= 0 && !(rc = etsim_sweep_proc_send(proc, (size_t)own, &err))) own_busy = 1;
  struct timespec last;
  clock_gettime(CLOCK_MONOTONIC, &last);
  char *buf = NULL;
  int cap = 0;
  while (!rc && (live > 0 || own_busy)) {
    int idle = 1;
    if (own_busy) {
      char *row;
      double cpu;
      int got = etsim_sweep_proc_collect(proc, timeout, &row, &cpu, &err);
      if (got < 0) {
        rc = got;
        break;
      }
      if (got) {
        idle = 0;
        long p = own;
        rc = etsim_sweep_sched_done(s, (size_t)p, row, cpu, &err);
        etsim_free(row);
        own_busy = 0;
        own = rc ? -1 : etsim_sweep_sched_next(s, 0);
        if (own >= 0 && !(rc = etsim_sweep_proc_send(proc, (size_t)own, &err))) own_busy = 1;
      }
    }
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_ROW, MPI_COMM_WORLD, &flag, &st);
    if (flag && !rc) {
      idle = 0;
      int n;
      MPI_Get_count(&st, MPI_CHAR, &n);
      if (n > cap) {
        free(buf);
        cap = n;
        buf = malloc((size_t)cap);
        if (!buf) {
          rc = etsim_error_set(&err, ETSIM_ENOMEM, "out of memory");
          break;
        }
      }
      MPI_Recv(buf, n, MPI_CHAR, st.MPI_SOURCE, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      long p;
      double cpu;
      const char *row;
      if (row_point(buf, &p, &cpu, &row))
        rc = etsim_error_set(&err, ETSIM_EINTERNAL, "rank %d sent a row without its point",
                             st.MPI_SOURCE);
      else rc = etsim_sweep_sched_done(s, (size_t)p, row, cpu, &err);
      long next = rc ? -1 : etsim_sweep_sched_next(s, (size_t)st.MPI_SOURCE);
      MPI_Send(&next, 1, MPI_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
      if (next < 0) live--;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (progress &&
        (now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000 >= 1000) {
      char line[256];
      etsim_sweep_sched_progress_line(s, line, sizeof line);
      fprintf(stderr, "\r%s\033[K", line);
      last = now;
    }
    if (idle) nap_ms(2);
  }
  free(buf);
  if (rc) {
    fprintf(stderr, "etsim: %s\n", err.msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (progress) {
    char line[256];
    etsim_sweep_sched_progress_line(s, line, sizeof line);
    fprintf(stderr, "\r%s\033[K\n", line);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  args_t a;
  if (parse(argc, argv, &a)) {
    if (rank == 0)
      fprintf(stderr,
              "etsim-sweep: run it as 'mpirun -np N etsim sweep SPEC -o DIR' (etsim passes "
              "--spec, --out and --etsim)\n");
    MPI_Finalize();
    return 2;
  }
  etsim_error_t err = {0};
  etsim_sweep_spec_t *spec = NULL;
  int rc = etsim_sweep_spec_load(a.spec, &spec, &err);
  /* every rank reads the same spec and fails the same way: rank 0 says so */
  if (rc) {
    if (rank == 0) fprintf(stderr, "etsim: %s\n", err.msg);
    MPI_Finalize();
    return 2;
  }
  etsim_sweep_sched_t *s = NULL;
  if (rank == 0) {
    etsim_sweep_sched_opts_t so = {a.restart, a.retry_failed, (size_t)a.limit};
    rc = etsim_sweep_sched_open(&s, spec, a.out, &so, &err);
    if (rc) fprintf(stderr, "etsim: %s\n", err.msg);
  }
  int ok = rc == 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    etsim_sweep_spec_free(spec);
    MPI_Finalize();
    return 2;
  }
  double timeout = a.timeout > 0 ? a.timeout : etsim_sweep_spec_timeout_s(spec);
  int keep = a.keep_traces || etsim_sweep_spec_keep_traces(spec);
  size_t ol = strlen(a.out) + 16;
  char *work = malloc(ol), *traces = malloc(ol);
  if (!work || !traces) {
    fprintf(stderr, "etsim: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  snprintf(work, ol, "%s/.work", a.out);
  snprintf(traces, ol, "%s/traces", a.out);
  char *xargv[] = {(char *)a.etsim,
                   "sweep",
                   "--serve",
                   (char *)a.spec,
                   "-o",
                   (char *)a.out,
                   keep ? "--keep-traces" : NULL,
                   NULL};
  etsim_sweep_exec_opts_t xo = {work, keep ? traces : NULL, a.etsim};
  etsim_sweep_proc_t *proc = NULL;
  /* the results folder exists now (rank 0 made it) */
  MPI_Barrier(MPI_COMM_WORLD);
  rc = etsim_sweep_proc_start(&proc, spec, &xo, xargv, &err);
  if (rc) {
    fprintf(stderr, "etsim: rank %d: %s\n", rank, err.msg);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rank != 0) serve_rank(proc, timeout, rank);
  else schedule(s, proc, size, timeout, a.progress);
  etsim_sweep_proc_stop(proc, NULL);
  double cpu = cpu_now(), total = 0;
  MPI_Reduce(&cpu, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  int code = 0;
  if (rank == 0) {
    size_t done = 0, failed = 0;
    etsim_sweep_sched_progress(s, &done, &failed, NULL, NULL);
    size_t resumed = etsim_sweep_sched_resumed(s), left = etsim_sweep_sched_todo(s);
    double wall;
    etsim_sweep_sched_progress(s, NULL, NULL, NULL, &wall);
    if (etsim_sweep_sched_close(s, total, size, "mpi", &err)) {
      fprintf(stderr, "etsim: %s\n", err.msg);
      code = 2;
    } else {
      printf(
          "%s: %zu points: %zu run now on %d ranks, %zu from before, %zu failed, %zu left; "
          "%.1f s, %.1f CPU s\n",
          a.out, etsim_sweep_n_points(spec), done, size, resumed, failed, left, wall, total);
    }
  }
  rmdir(work);
  free(work);
  free(traces);
  etsim_sweep_spec_free(spec);
  MPI_Finalize();
  return code;
}

#else
/* Built into libetsim without MPI: nothing here. */
typedef int etsim_sweep_mpi_worker_absent_t;
#endif /* ETSIM_SWEEP_MPI */

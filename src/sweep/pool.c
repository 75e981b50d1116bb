/* Executor processes and the local sweep.
 *
 * A point runs in an executor process, never in the scheduler's: a point
 * that crashes, loops or exhausts memory takes one executor with it, and
 * the scheduler records the point as failed and starts another.  The
 * executor talks over two pipes — point indices in, "<cpu seconds> <row>"
 * lines out — so the same executor serves a local sweep (a fork of the
 * etsim process) and an MPI rank (`etsim sweep --serve`, started with
 * fork-then-exec as MPI programs may).
 */
#include "sweep/sweep_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int etsim_sweep_cpus(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static double cpu_now(int who) {
  struct rusage ru;
  if (getrusage(who, &ru)) return 0;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* ------------------------------------------------------------- serve */

static int own_scratch(const char *base, char *out, size_t cap) {
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  for (char *c = host; *c; c++)
    if (*c == '/' || *c == ' ') *c = '_';
  return snprintf(out, cap, "%s/%s-%ld", base, host, (long)getpid()) >= (int)cap ? -1 : 0;
}

int etsim_sweep_serve(const etsim_sweep_spec_t *spec, const etsim_sweep_exec_opts_t *o, int in_fd,
                      int out_fd, etsim_error_t *err) {
  char scratch[4096];
  if (own_scratch(o->scratch, scratch, sizeof scratch))
    return etsim_error_set(err, ETSIM_EINVAL, "%s: path too long", o->scratch);
  etsim_sweep_exec_opts_t mine = *o;
  mine.scratch = scratch;
  etsim_sweep_exec_t *x;
  int rc = etsim_sweep_exec_create(&x, spec, &mine, err);
  if (rc) return rc;
  char buf[256];
  size_t n = 0;
  for (;;) {
    char *nl = memchr(buf, '\n', n);
    if (!nl) {
      if (n == sizeof buf) {
        rc = etsim_error_set(err, ETSIM_EINVAL, "sweep executor: a request line is too long");
        break;
      }
      ssize_t r = read(in_fd, buf + n, sizeof buf - n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break; /* the scheduler is gone: stop */
      n += (size_t)r;
      continue;
    }
    *nl = 0;
    size_t used = (size_t)(nl - buf) + 1;
    if (buf[0] == 'q') break;
    char *end;
    errno = 0;
    unsigned long long p = strtoull(buf, &end, 10);
    if (errno || *end || end == buf || p >= etsim_sweep_n_points(spec)) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "sweep executor: bad request '%s'", buf);
      break;
    }
    memmove(buf, buf + used, n - used);
    n -= used;
    double c0 = cpu_now(RUSAGE_SELF) + cpu_now(RUSAGE_CHILDREN);
    char *row;
    if ((rc = etsim_sweep_exec_point(x, (size_t)p, &row))) {
      etsim_error_set(err, rc, "sweep executor: out of memory");
      break;
    }
    double c1 = cpu_now(RUSAGE_SELF) + cpu_now(RUSAGE_CHILDREN);
    char head[64];
    int hl = snprintf(head, sizeof head, "%.6f ", c1 - c0);
    int w = write_all(out_fd, head, (size_t)hl) || write_all(out_fd, row, strlen(row)) ||
            write_all(out_fd, "\n", 1);
    etsim_free(row);
    if (w) break; /* the scheduler is gone */
  }
  etsim_sweep_exec_free(x);
  return rc;
}

/* ------------------------------------------------------------- procs */

struct etsim_sweep_proc {
  const etsim_sweep_spec_t *spec;
  etsim_sweep_exec_opts_t o;
  char *scratch, *traces, *exe;
  char **argv; /* NULL: fork mode */
  pid_t pid;
  int to, from;
  long point;
  struct timespec sent;
  char *buf;
  size_t n, cap;
};

static void close_other_fds(int keep_a, int keep_b) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) {
    for (int fd = 3; fd < 1024; fd++)
      if (fd != keep_a && fd != keep_b) close(fd);
    return;
  }
  int dfd = dirfd(d);
  int fds[1024], n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 1024) {
    int fd = atoi(e->d_name);
    if (fd > 2 && fd != dfd && fd != keep_a && fd != keep_b) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) close(fds[i]);
}

static int spawn(etsim_sweep_proc_t *p, etsim_error_t *err) {
  int in[2], out[2];
  if (pipe(in) || pipe(out))
    return etsim_error_set(err, ETSIM_EIO, "sweep: cannot make a pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return etsim_error_set(err, ETSIM_EIO, "sweep: cannot start an executor: %s", strerror(e));
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close_other_fds(-1, -1);
    if (p->argv) {
      execv(p->argv[0], p->argv);
      _exit(127);
    }
    signal(SIGPIPE, SIG_DFL);
    etsim_error_t e = {0};
    int rc = etsim_sweep_serve(p->spec, &p->o, 0, 1, &e);
    if (rc) {
      char line[1200];
      int n = snprintf(line, sizeof line, "etsim: %s\n", e.msg);
      if (n > 0) write_all(2, line, (size_t)n);
    }
    _exit(rc ? 3 : 0);
  }
  close(in[0]);
  close(out[1]);
  fcntl(in[1], F_SETFD, FD_CLOEXEC);
  fcntl(out[0], F_SETFD, FD_CLOEXEC);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  p->pid = pid;
  p->to = in[1];
  p->from = out[0];
  p->point = -1;
  p->n = 0;
  return 0;
}

int etsim_sweep_proc_start(etsim_sweep_proc_t **out, const etsim_sweep_spec_t *spec,
                           const etsim_sweep_exec_opts_t *o, char *const *argv,
                           etsim_error_t *err) {
  /* a dead executor must not kill the scheduler writing to its pipe */
  signal(SIGPIPE, SIG_IGN);
  etsim_sweep_proc_t *p = etsim_calloc(1, sizeof *p);
  if (!p) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  p->spec = spec;
  p->scratch = etsim_strdup(o->scratch);
  p->traces = o->traces ? etsim_strdup(o->traces) : NULL;
  p->exe = o->etsim_exe ? etsim_strdup(o->etsim_exe) : NULL;
  int oom = !p->scratch || (o->traces && !p->traces) || (o->etsim_exe && !p->exe);
  if (argv) {
    size_t n = 0;
    while (argv[n]) n++;
    p->argv = etsim_calloc(n + 1, sizeof *p->argv);
    oom |= !p->argv;
    for (size_t i = 0; !oom && i < n; i++) oom |= !(p->argv[i] = etsim_strdup(argv[i]));
  }
  p->o = (etsim_sweep_exec_opts_t){p->scratch, p->traces, p->exe};
  p->to = p->from = -1;
  int rc = oom ? etsim_error_set(err, ETSIM_ENOMEM, "out of memory") : spawn(p, err);
  if (rc) {
    etsim_sweep_proc_stop(p, NULL);
    return rc;
  }
  *out = p;
  return 0;
}

int etsim_sweep_proc_send(etsim_sweep_proc_t *p, size_t point, etsim_error_t *err) {
  char line[32];
  int n = snprintf(line, sizeof line, "%zu\n", point);
  p->point = (long)point;
  clock_gettime(CLOCK_MONOTONIC, &p->sent);
  p->n = 0;
  /* a write to a dead executor fails here; collect then sees it gone */
  if (write_all(p->to, line, (size_t)n) && errno != EPIPE)
    return etsim_error_set(err, ETSIM_EIO, "sweep: cannot reach an executor: %s", strerror(errno));
  return 0;
}

int etsim_sweep_proc_fd(const etsim_sweep_proc_t *p) { return p->from; }

double etsim_sweep_proc_busy_s(const etsim_sweep_proc_t *p) {
  if (p->point < 0) return 0;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - p->sent.tv_sec) + 1e-9 * (double)(t.tv_nsec - p->sent.tv_nsec);
}

static void reap(etsim_sweep_proc_t *p, int *status) {
  if (p->to >= 0) close(p->to);
  if (p->from >= 0) close(p->from);
  p->to = p->from = -1;
  int st = 0;
  if (p->pid > 0)
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR) {}
  p->pid = 0;
  if (status) *status = st;
}

/* The point in flight did not come back: a failed row, a new executor. */
static int lost(etsim_sweep_proc_t *p, const char *why, char **row_out, etsim_error_t *err) {
  char msg[256];
  size_t point = (size_t)p->point;
  int st = 0;
  reap(p, &st);
  if (why) snprintf(msg, sizeof msg, "%s", why);
  else if (WIFSIGNALED(st))
    snprintf(msg, sizeof msg, "the executor running this point died (signal %d: %s)", WTERMSIG(st),
             strsignal(WTERMSIG(st)));
  else
    snprintf(msg, sizeof msg, "the executor running this point exited (status %d)",
             WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  *row_out = etsim_sweep_failed_row(p->spec, point, msg);
  p->point = -1;
  if (!*row_out) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  return spawn(p, err);
}

int etsim_sweep_proc_collect(etsim_sweep_proc_t *p, double timeout_s, char **row_out, double *cpu_s,
                             etsim_error_t *err) {
  if (p->point < 0) return 0;
  for (;;) {
    char *nl = p->n ? memchr(p->buf, '\n', p->n) : NULL;
    if (nl) {
      *nl = 0;
      char *sp = strchr(p->buf, ' ');
      if (!sp) return etsim_error_set(err, ETSIM_EINTERNAL, "sweep: an executor's answer is torn");
      *sp = 0;
      if (cpu_s) *cpu_s = strtod(p->buf, NULL);
      *row_out = etsim_strdup(sp + 1);
      p->n = 0;
      p->point = -1;
      return *row_out ? 1 : etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
    if (etsim_grow((void **)&p->buf, &p->cap, p->n + 65536, 1))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    ssize_t r = read(p->from, p->buf + p->n, p->cap - p->n - 1);
    if (r > 0) {
      p->n += (size_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (timeout_s > 0 && etsim_sweep_proc_busy_s(p) > timeout_s) {
        char why[128];
        snprintf(why, sizeof why, "stopped after the timeout of %g s", timeout_s);
        kill(p->pid, SIGKILL);
        if (cpu_s) *cpu_s = 0;
        int rc = lost(p, why, row_out, err);
        return rc ? rc : 1;
      }
      return 0;
    }
    /* end of file: the executor died */
    if (cpu_s) *cpu_s = 0;
    int rc = lost(p, NULL, row_out, err);
    return rc ? rc : 1;
  }
}

void etsim_sweep_proc_stop(etsim_sweep_proc_t *p, double *cpu_s) {
  if (!p) return;
  (void)cpu_s;
  if (p->to >= 0) write_all(p->to, "q\n", 2);
  reap(p, NULL);
  if (p->argv)
    for (size_t i = 0; p->argv[i]; i++) etsim_free(p->argv[i]);
  etsim_free(p->argv);
  etsim_free(p->buf);
  etsim_free(p->scratch);
  etsim_free(p->traces);
  etsim_free(p->exe);
  etsim_free(p);
}

/* ------------------------------------------------------------- local */

/* A process that is gone, or a zombie nobody reaped yet (an executor of a
 * killed run whose parent died with it). */
static int gone(long pid) {
  if (kill((pid_t)pid, 0) != 0) return errno == ESRCH;
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Executors of this host that a killed run left behind: their scratch
 * folders ("<host>-<pid>" whose pid is gone) are removed. */
static void clean_stale(const char *work) {
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  size_t hl = strlen(host);
  DIR *d = opendir(work);
  if (!d) return;
  struct dirent *e;
  char names[64][300];
  int n = 0;
  while ((e = readdir(d)) && n < 64) {
    if (strncmp(e->d_name, host, hl) || e->d_name[hl] != '-') continue;
    long pid = atol(e->d_name + hl + 1);
    if (pid > 0 && gone(pid)) snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  }
  closedir(d);
  for (int i = 0; i < n; i++) {
    char path[4400];
    if (snprintf(path, sizeof path, "%s/%.299s", work, names[i]) < (int)sizeof path)
      etsim_sweep__remove_tree(path);
  }
}

int etsim_sweep_run_local(const etsim_sweep_spec_t *spec, const char *dir,
                          const etsim_sweep_run_opts_t *o, etsim_sweep_summary_t *sum,
                          etsim_error_t *err) {
  etsim_sweep_sched_t *s;
  int rc = etsim_sweep_sched_open(&s, spec, dir, &o->sched, err);
  if (rc) return rc;
  double c0 = cpu_now(RUSAGE_SELF) + cpu_now(RUSAGE_CHILDREN);
  size_t todo = etsim_sweep_sched_todo(s);
  if (o->sched.limit && todo > o->sched.limit) todo = o->sched.limit;
  int jobs = o->jobs > 0 ? o->jobs : etsim_sweep_cpus();
  if ((size_t)jobs > todo) jobs = (int)todo;
  double timeout = o->timeout_s > 0 ? o->timeout_s : etsim_sweep_spec_timeout_s(spec);
  size_t dl = strlen(dir);
  char *work = etsim_malloc(dl + 8), *traces = etsim_malloc(dl + 8);
  etsim_sweep_proc_t **procs = etsim_calloc(jobs > 0 ? (size_t)jobs : 1, sizeof *procs);
  struct pollfd *pf = etsim_calloc(jobs > 0 ? (size_t)jobs : 1, sizeof *pf);
  if (!work || !traces || !procs || !pf) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  snprintf(work, dl + 8, "%s/.work", dir);
  snprintf(traces, dl + 8, "%s/traces", dir);
  if (mkdir(work, 0777) && errno != EEXIST) {
    rc = etsim_error_set(err, ETSIM_EIO, "%s: %s", work, strerror(errno));
    goto out;
  }
  clean_stale(work);
  int keep = o->keep_traces || etsim_sweep_spec_keep_traces(spec);
  etsim_sweep_exec_opts_t xo = {work, keep ? traces : NULL, o->etsim_exe};
  for (int j = 0; j < jobs && !rc; j++)
    rc = etsim_sweep_proc_start(&procs[j], spec, &xo, NULL, err);
  struct timespec last;
  clock_gettime(CLOCK_MONOTONIC, &last);
  int busy = 0;
  for (int j = 0; j < jobs && !rc; j++) {
    long p = etsim_sweep_sched_next(s, (size_t)j);
    if (p >= 0) {
      rc = etsim_sweep_proc_send(procs[j], (size_t)p, err);
      busy++;
    }
  }
  while (!rc && busy) {
    int np = 0;
    for (int j = 0; j < jobs; j++) {
      pf[j].fd = etsim_sweep_proc_fd(procs[j]);
      pf[j].events = POLLIN;
      pf[j].revents = 0;
      np++;
    }
    /* wake at least once a second: progress and timeouts */
    int pr = poll(pf, (nfds_t)np, 1000);
    if (pr < 0 && errno != EINTR) {
      rc = etsim_error_set(err, ETSIM_EIO, "sweep: poll: %s", strerror(errno));
      break;
    }
    for (int j = 0; j < jobs && !rc; j++) {
      char *row = NULL;
      double cpu = 0;
      long point = -1;
      if (etsim_sweep_proc_busy_s(procs[j]) <= 0 && !(pf[j].revents)) continue;
      /* which point: the scheduler's record is the executor's last send */
      int got = etsim_sweep_proc_collect(procs[j], timeout, &row, &cpu, err);
      if (got < 0) {
        rc = got;
        break;
      }
      if (!got) continue;
      json_t *jr = json_loads(row, 0, NULL);
      point = jr ? (long)json_integer_value(json_object_get(jr, "point")) : -1;
      json_decref(jr);
      rc = point >= 0 ? etsim_sweep_sched_done(s, (size_t)point, row, cpu, err)
                      : etsim_error_set(err, ETSIM_EINTERNAL, "sweep: a row without its point");
      etsim_free(row);
      busy--;
      if (rc) break;
      long next = etsim_sweep_sched_next(s, (size_t)j);
      if (next >= 0) {
        rc = etsim_sweep_proc_send(procs[j], (size_t)next, err);
        busy++;
      }
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (o->progress &&
        (now.tv_sec - last.tv_sec) * 1000 + (now.tv_nsec - last.tv_nsec) / 1000000 >= 1000) {
      char line[256];
      etsim_sweep_sched_progress_line(s, line, sizeof line);
      o->progress(o->user, line, 0);
      last = now;
    }
  }
out:
  for (int j = 0; procs && j < jobs; j++) etsim_sweep_proc_stop(procs[j], NULL);
  /* Again at the end: an executor of a killed run may still have been
   * dying (SIGKILL delivered, not yet reaped) when this run started. */
  if (work) clean_stale(work);
  if (work) rmdir(work); /* empty unless another run shares the folder */
  double cpu = cpu_now(RUSAGE_SELF) + cpu_now(RUSAGE_CHILDREN) - c0;
  if (!rc && o->progress) {
    char line[256];
    etsim_sweep_sched_progress_line(s, line, sizeof line);
    o->progress(o->user, line, 1);
  }
  size_t done = 0, failed = 0;
  etsim_sweep_sched_progress(s, &done, &failed, NULL, NULL);
  size_t resumed = etsim_sweep_sched_resumed(s), left = etsim_sweep_sched_todo(s);
  if (!rc) rc = etsim_sweep_sched_close(s, cpu, jobs, "local", err);
  else etsim_sweep_sched_abort(s);
  if (sum) {
    memset(sum, 0, sizeof *sum);
    sum->points = etsim_sweep_n_points(spec);
    sum->ran = done;
    sum->resumed = resumed;
    sum->failed = failed;
    sum->ok = sum->points - left - failed;
    sum->cpu_s = cpu;
  }
  etsim_free(work);
  etsim_free(traces);
  etsim_free(procs);
  etsim_free(pf);
  return rc;
}

/*
 * progress.c — the progress line of long commands (see cli.h): sim,
 * netsim, convert, synth train and replay show where they are on a
 * terminal, and nothing when stderr is piped or --quiet is given.
 */
#include "cli/cli.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Warnings and progress share stderr: a line printed while a progress line
 * is drawn would be glued to it, so cli_progress_print erases the drawn line
 * first (the next update redraws it).  The lock matters only for the
 * ticker's thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cli_progress_t *shown;

/* ETSIM_PROGRESS=1 shows the line when stderr is not a terminal too (a
 * test reading it, a job log), =0 never; --quiet wins over both.
 * ETSIM_PROGRESS_EVERY=S redraws every S seconds instead of 4 times a
 * second (0: at every update, which makes a test's output deterministic). */
int cli_progress_wanted(int quiet, double *every_s) {
  const char *e = getenv("ETSIM_PROGRESS"), *ev = getenv("ETSIM_PROGRESS_EVERY");
  char *end;
  double every = ev && *ev ? strtod(ev, &end) : 0.25;
  if (!ev || !*ev || *end || !(every >= 0) || every > 3600) every = 0.25;
  if (every_s) *every_s = every;
  if (quiet || cli_quiet) return 0;
  if (e && *e) return strcmp(e, "0") != 0;
  return isatty(STDERR_FILENO);
}

void cli_progress_begin(cli_progress_t *pg, const char *what, int quiet) {
  memset(pg, 0, sizeof *pg);
  double every;
  pg->on = cli_progress_wanted(quiet, &every);
  etsim_progress_init(&pg->p, what, every);
}

void cli_progress(cli_progress_t *pg, double frac, const char *fmt, ...) {
  if (!pg->on) return;
  char what[200], line[320];
  va_list ap;
  if (!etsim_progress_due(&pg->p)) return; /* format nothing until a redraw is due */
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (!etsim_progress_line(&pg->p, line, sizeof line, frac, "%s", what)) return;
  /* one line, rewritten: back to column 0, the text, erase what is left */
  pthread_mutex_lock(&lock);
  int n = fprintf(stderr, "\r%s\033[K", line);
  if (n > 0) pg->wrote += (uint64_t)n;
  fflush(stderr);
  pg->drawn = 1;
  shown = pg;
  pthread_mutex_unlock(&lock);
}

void cli_progress_clear(cli_progress_t *pg) {
  pthread_mutex_lock(&lock);
  if (pg->on && pg->drawn) {
    fputs("\r\033[K", stderr);
    pg->wrote += 4;
    fflush(stderr);
    pg->drawn = 0;
  }
  if (shown == pg) shown = NULL;
  pthread_mutex_unlock(&lock);
}

void cli_progress_end(cli_progress_t *pg) {
  cli_progress_clear(pg);
  pg->on = 0;
}

/* ------------------------------------------------------------ coordination */

void cli_progress_print(const char *fmt, ...) {
  pthread_mutex_lock(&lock);
  if (shown && shown->drawn) {
    fputs("\r\033[K", stderr);
    shown->drawn = 0;
  }
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ ticker */

/* Bytes this process has read and written (Linux /proc/self/io rchar and
 * wchar), less what reading that file and drawing the line itself cost
 * (*own_rd counts the former); 0 when unknown. */
static void io_bytes(uint64_t *rd, uint64_t *wr, uint64_t *own_rd) {
  *rd = *wr = 0;
  int fd = open("/proc/self/io", O_RDONLY);
  if (fd < 0) return;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = 0;
  const char *r = strstr(buf, "rchar:"), *w = strstr(buf, "wchar:");
  if (r) *rd = strtoull(r + 6, NULL, 10) - *own_rd;
  if (w) *wr = strtoull(w + 6, NULL, 10);
  *own_rd += (uint64_t)n;
}

static void human(char *s, size_t cap, double b) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (b >= 1024 && k < 4) b /= 1024, k++;
  snprintf(s, cap, k ? "%.1f %s" : "%.0f %s", b, u[k]);
}

static void *tick(void *arg) {
  cli_ticker_t *t = arg;
  uint64_t r0, w0, own = 0;
  io_bytes(&r0, &w0, &own);
  /* wake 10 times a second, or as often as the line is redrawn if more
   * (ETSIM_PROGRESS_EVERY below 0.1 s), but never spin */
  double nap = t->pg.p.every_s < 0.1 ? t->pg.p.every_s : 0.1;
  if (nap < 0.001) nap = 0.001;
  for (;;) {
    struct timespec ts = {0, (long)(nap * 1e9)};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&lock);
    int stop = t->stop;
    pthread_mutex_unlock(&lock);
    if (stop) break;
    uint64_t r, w;
    io_bytes(&r, &w, &own);
    w -= t->pg.wrote; /* our own lines */
    char a[32], b[32];
    human(a, sizeof a, r > r0 ? (double)(r - r0) : 0);
    human(b, sizeof b, w > w0 ? (double)(w - w0) : 0);
    cli_progress(&t->pg, -1, "%s: %s read, %s written", t->input, a, b);
  }
  return NULL;
}

void cli_ticker_start(cli_ticker_t *t, const char *what, const char *input, int quiet) {
  memset(t, 0, sizeof *t);
  t->input = input;
  cli_progress_begin(&t->pg, what, quiet);
  t->running = t->pg.on && pthread_create(&t->thread, NULL, tick, t) == 0;
}

void cli_ticker_stop(cli_ticker_t *t) {
  if (t->running) {
    pthread_mutex_lock(&lock);
    t->stop = 1;
    pthread_mutex_unlock(&lock);
    pthread_join(t->thread, NULL);
    t->running = 0;
  }
  cli_progress_end(&t->pg);
}

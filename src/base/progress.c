/* Progress lines: when to show one and what it says (see etsim/base.h).
 * The time left is elapsed x (1 - done) / done, shown once a few percent
 * are done so the first guesses do not jump about.  Also the stopwatch
 * that times runs on the same clocks. */
#include "etsim/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static double clock_s(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double mono_s(void) { return clock_s(CLOCK_MONOTONIC); }

void etsim_stopwatch_start(etsim_stopwatch_t *t) {
  t->wall0 = mono_s();
  t->cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  t->wall_s = t->cpu_s = 0;
}

void etsim_stopwatch_stop(etsim_stopwatch_t *t) {
  t->wall_s = mono_s() - t->wall0;
  t->cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - t->cpu0;
}

double etsim_stopwatch_wall(const etsim_stopwatch_t *t) { return mono_s() - t->wall0; }

void etsim_progress_init(etsim_progress_t *p, const char *what, double every_s) {
  p->what = what;
  p->every_s = every_s >= 0 ? every_s : 0.25; /* 0: every call */
  p->t0 = mono_s();
  p->next = p->t0 + p->every_s;
}

int etsim_progress_due(const etsim_progress_t *p) { return mono_s() >= p->next; }

double etsim_progress_elapsed(const etsim_progress_t *p) { return mono_s() - p->t0; }

/* "4.2 s", "3 min 10 s", "2 h 5 min" */
static void duration(char *s, size_t cap, double sec) {
  if (sec < 60) snprintf(s, cap, "%.1f s", sec);
  else if (sec < 3600) snprintf(s, cap, "%d min %02d s", (int)(sec / 60), (int)sec % 60);
  else snprintf(s, cap, "%d h %02d min", (int)(sec / 3600), (int)(sec / 60) % 60);
}

size_t etsim_progress_line(etsim_progress_t *p, char *out, size_t cap, double frac, const char *fmt,
                           ...) {
  double now = mono_s();
  if (now < p->next || !cap) return 0;
  p->next = now + p->every_s;
  int k = frac >= 0
              ? snprintf(out, cap, "[etsim %s] %3.0f %% | ", p->what, 100 * (frac > 1 ? 1 : frac))
              : snprintf(out, cap, "[etsim %s] ", p->what);
  if (k < 0 || (size_t)k >= cap) return cap - 1;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(out + k, cap - (size_t)k, fmt, ap);
  va_end(ap);
  if (m < 0 || (size_t)(k + m) >= cap) return cap - 1;
  k += m;
  char el[32], left[32];
  duration(el, sizeof el, now - p->t0);
  if (frac >= 0.02 && frac < 1) {
    duration(left, sizeof left, (now - p->t0) * (1 - frac) / frac);
    m = snprintf(out + k, cap - (size_t)k, " | %s, about %s left", el, left);
  } else {
    m = snprintf(out + k, cap - (size_t)k, " | %s", el);
  }
  if (m < 0 || (size_t)(k + m) >= cap) return cap - 1;
  return (size_t)(k + m);
}

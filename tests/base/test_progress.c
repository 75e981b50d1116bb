/*
 * test_progress.c — the progress line's pacing and wording: nothing before
 * the first interval (short runs show nothing), then at most one line per
 * interval; the share done, the elapsed time and the time left as
 * elapsed x (1 - done) / done, in the units a person reads; truncation
 * within the buffer.  Elapsed time is made exact by moving the start back.
 */
#include "test_util.h"

#include "etsim/base.h"

#include <string.h>
#include <time.h>

static void test_pacing(void **s) {
  (void)s;
  char line[256];
  etsim_progress_t p;
  etsim_progress_init(&p, "netsim", 3600);
  assert_false(etsim_progress_due(&p));
  assert_int_equal(etsim_progress_line(&p, line, sizeof line, 0.5, "x"), 0);
  /* the interval passed: one line, then none until the next interval */
  p.next = p.t0 - 1;
  assert_true(etsim_progress_due(&p));
  TU_GT(etsim_progress_line(&p, line, sizeof line, 0.5, "x"), 0);
  assert_false(etsim_progress_due(&p));
  assert_int_equal(etsim_progress_line(&p, line, sizeof line, 0.6, "x"), 0);
  /* interval 0: a line at every call; negative: the default quarter second */
  etsim_progress_init(&p, "netsim", 0);
  for (int i = 0; i < 3; i++) TU_GT(etsim_progress_line(&p, line, sizeof line, -1, "x"), 0);
  etsim_progress_init(&p, "netsim", -1);
  TU_EQ(p.every_s, 0.25);
  assert_int_equal(etsim_progress_line(&p, line, sizeof line, -1, "x"), 0);
}

static void test_wording(void **s) {
  (void)s;
  char line[256];
  etsim_progress_t p;
  etsim_progress_init(&p, "netsim", 0);
  p.t0 -= 10; /* 10 s ago: a quarter done leaves 30 s */
  size_t n = etsim_progress_line(&p, line, sizeof line, 0.25, "%d of %d flows", 5, 20);
  assert_string_equal(line, "[etsim netsim]  25 % | 5 of 20 flows | 10.0 s, about 30.0 s left");
  assert_int_equal(n, strlen(line));
  TU_GE(etsim_progress_elapsed(&p), 10);
  TU_LT(etsim_progress_elapsed(&p), 11);
  /* minutes and hours */
  p.t0 -= 115; /* 125 s: half done leaves as much again */
  etsim_progress_line(&p, line, sizeof line, 0.5, "half");
  assert_string_equal(line, "[etsim netsim]  50 % | half | 2 min 05 s, about 2 min 05 s left");
  p.t0 -= 7375; /* 7500 s = 2 h 05 min, 3 quarters left: 6 h 15 min */
  etsim_progress_line(&p, line, sizeof line, 0.25, "slow");
  assert_string_equal(line, "[etsim netsim]  25 % | slow | 2 h 05 min, about 6 h 15 min left");
  /* no estimate while under 2 % done, when done, or when the share is unknown */
  etsim_progress_init(&p, "sim", 0);
  p.t0 -= 4;
  etsim_progress_line(&p, line, sizeof line, 0.01, "start");
  assert_string_equal(line, "[etsim sim]   1 % | start | 4.0 s");
  etsim_progress_line(&p, line, sizeof line, 1.5, "end");
  assert_string_equal(line, "[etsim sim] 100 % | end | 4.0 s");
  etsim_progress_line(&p, line, sizeof line, -1, "%s: %s read", "a.json", "1.5 MiB");
  assert_string_equal(line, "[etsim sim] a.json: 1.5 MiB read | 4.0 s");
}

static void test_truncation(void **s) {
  (void)s;
  char line[16];
  etsim_progress_t p;
  etsim_progress_init(&p, "netsim", 0);
  size_t n = etsim_progress_line(&p, line, sizeof line, 0.5, "a long description of the work");
  assert_int_equal(n, sizeof line - 1);
  assert_int_equal(strlen(line), n);
  assert_string_equal(line, "[etsim netsim] ");
  n = etsim_progress_line(&p, line, 0, 0.5, "x");
  assert_int_equal(n, 0);
}

/* A stopwatch around 30 ms of busy work: the CPU seconds it reports are
 * those the CPU clock moved by (to its 1 ms resolution here), wall time is
 * at least that (one thread), and a second stop and the wall reading
 * measure from the same start. */
static void test_stopwatch(void **s) {
  (void)s;
  etsim_stopwatch_t sw;
  etsim_stopwatch_start(&sw);
  struct timespec a, b;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
  volatile uint64_t x = 1;
  double spun;
  do {
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ull + 1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    spun = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
  } while (spun < 0.03);
  etsim_stopwatch_stop(&sw);
  if (!(sw.cpu_s >= spun - 0.001 && sw.cpu_s < spun + 0.5))
    fail_msg("cpu_s %.6f for %.6f s spun", sw.cpu_s, spun);
  if (!(sw.wall_s >= sw.cpu_s - 0.001)) fail_msg("wall_s %.6f < cpu_s %.6f", sw.wall_s, sw.cpu_s);
  double first = sw.cpu_s;
  etsim_stopwatch_stop(&sw);
  if (!(sw.cpu_s >= first)) fail_msg("second stop %.6f before the first %.6f", sw.cpu_s, first);
  /* the wall reading alone runs on from the same start */
  double w = etsim_stopwatch_wall(&sw);
  TU_GE(w, sw.wall_s);
  TU_LT(w, sw.wall_s + 0.5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pacing),
      cmocka_unit_test(test_wording),
      cmocka_unit_test(test_truncation),
      cmocka_unit_test(test_stopwatch),
  };
  return TU_RUN(tests, NULL, NULL);
}

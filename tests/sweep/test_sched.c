/*
 * test_sched.c — the sweep scheduler through its public API, on a spec of
 * 2 trace sets x 3 network points: an executor keeps to one trace set
 * while it has points; the progress line counts this run's points (its
 * share and time left leave out points finished before); a reopened folder
 * resumes exactly the finished points; --limit caps what a run starts.
 */
#include "test_util.h"

#include "etsim/sweep.h"

#include <string.h>

static etsim_sweep_spec_t *load_spec(void) {
  const char *src = getenv("ETSIM_SRC");
  assert_non_null(src);
  char path[4200], text[8800];
  snprintf(path, sizeof path, "%s/spec.yaml", tmp);
  snprintf(text, sizeof text,
           "base:\n"
           "  gen: \"micro --coll all-reduce --npus 8 --size 1MiB\"\n"
           "  network: %s/examples/sweep/ring8.yml\n"
           "  system: %s/examples/sweep/ring_4chunks.json\n"
           "axes:\n"
           "  - list: {gen.size: [1MiB, 2MiB]}\n"
           "  - list: {\"network.bandwidth[0]\": [25, 50, 100]}\n",
           src, src);
  assert_int_equal(tu_write(path, text, strlen(text)), 0);
  etsim_sweep_spec_t *s = NULL;
  etsim_error_t err = {0};
  if (etsim_sweep_spec_load(path, &s, &err)) fail_msg("%s", err.msg);
  assert_int_equal(etsim_sweep_n_points(s), 6);
  assert_int_equal(etsim_sweep_n_groups(s), 2);
  return s;
}

/* Finish `point` with a (failed) row made by the library itself. */
static void finish(etsim_sweep_sched_t *q, etsim_sweep_spec_t *s, long point) {
  TU_GE(point, 0);
  char *row = etsim_sweep_failed_row(s, (size_t)point, "test");
  assert_non_null(row);
  etsim_error_t err = {0};
  if (etsim_sweep_sched_done(q, (size_t)point, row, 0.5, &err)) fail_msg("%s", err.msg);
  etsim_free(row);
}

static void test_schedule_progress_resume(void **state) {
  (void)state;
  etsim_sweep_spec_t *s = load_spec();
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/res", tmp);
  etsim_error_t err = {0};
  etsim_sweep_sched_t *q;
  etsim_sweep_sched_opts_t o = {0, 0, 0};
  if (etsim_sweep_sched_open(&q, s, dir, &o, &err)) fail_msg("%s", err.msg);
  assert_int_equal(etsim_sweep_sched_todo(q), 6);
  /* two executors: each takes a trace set of its own and keeps to it */
  long a = etsim_sweep_sched_next(q, 0), b = etsim_sweep_sched_next(q, 1);
  assert_int_not_equal(etsim_sweep_point_group(s, (size_t)a),
                       etsim_sweep_point_group(s, (size_t)b));
  finish(q, s, a);
  long a2 = etsim_sweep_sched_next(q, 0);
  assert_int_equal(etsim_sweep_point_group(s, (size_t)a2), etsim_sweep_point_group(s, (size_t)a));
  /* 1 done, 2 running, 3 waiting: 1 of 6 this run, 17 % */
  char line[256];
  etsim_sweep_sched_progress_line(q, line, sizeof line);
  assert_non_null(strstr(line, "[etsim sweep]  17 % | 1 of 6 points, 1 failed, 2 running | "));
  assert_non_null(strstr(line, " left")); /* the time left, once some share is done */
  finish(q, s, b);
  finish(q, s, a2);
  if (etsim_sweep_sched_close(q, 1.5, 2, "local", &err)) fail_msg("%s", err.msg);

  /* reopen: the three finished points are not run again; the share counts
   * this run's points only */
  if (etsim_sweep_sched_open(&q, s, dir, &o, &err)) fail_msg("%s", err.msg);
  assert_int_equal(etsim_sweep_sched_resumed(q), 3);
  assert_int_equal(etsim_sweep_sched_todo(q), 3);
  etsim_sweep_sched_progress_line(q, line, sizeof line);
  assert_non_null(strstr(line, "[etsim sweep]   0 % | 3 of 6 points, 3 failed, 0 running | "));
  long seen[3];
  for (int i = 0; i < 3; i++) {
    seen[i] = etsim_sweep_sched_next(q, 0);
    TU_NE(seen[i], a);
    TU_NE(seen[i], b);
    TU_NE(seen[i], a2);
    finish(q, s, seen[i]);
  }
  assert_int_equal(etsim_sweep_sched_next(q, 0), -1);
  etsim_sweep_sched_progress_line(q, line, sizeof line);
  assert_non_null(strstr(line, "[etsim sweep] 100 % | 6 of 6 points, 6 failed, 0 running | "));
  assert_null(strstr(line, " left"));
  if (etsim_sweep_sched_close(q, 1.5, 1, "local", &err)) fail_msg("%s", err.msg);

  /* points.jsonl is in point order, one row each */
  char path[4300];
  snprintf(path, sizeof path, "%s/points.jsonl", dir);
  size_t n;
  char *text = (char *)tu_read(path, &n);
  assert_non_null(text);
  const char *p = text;
  for (int i = 0; i < 6; i++) {
    char want[32];
    snprintf(want, sizeof want, "{\"point\": %d,", i);
    assert_memory_equal(p, want, strlen(want));
    p = strchr(p, '\n');
    assert_non_null(p);
    p++;
  }
  assert_int_equal(*p, 0);
  free(text);

  /* --restart with --limit 2: two points start, then none */
  etsim_sweep_sched_opts_t lim = {1, 0, 2};
  if (etsim_sweep_sched_open(&q, s, dir, &lim, &err)) fail_msg("%s", err.msg);
  assert_int_equal(etsim_sweep_sched_resumed(q), 0);
  long x = etsim_sweep_sched_next(q, 0), y = etsim_sweep_sched_next(q, 1);
  TU_GE(x, 0);
  TU_GE(y, 0);
  assert_int_equal(etsim_sweep_sched_next(q, 2), -1);
  finish(q, s, x);
  finish(q, s, y);
  if (etsim_sweep_sched_close(q, 0, 2, "local", &err)) fail_msg("%s", err.msg);
  etsim_sweep_spec_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_schedule_progress_resume)};
  return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}

/*
 * test_html.c — the HTML report from hand-made inputs with known answers:
 * number formats, the heat map's PNG decoded pixel by pixel, the critical
 * NPU and its bar, 10,000 NPUs in groups, a network timeline's integrals,
 * a sweep's Pareto front against a brute-force one, links relative to the
 * page, synth histograms as shares, determinism, and bad input named by
 * file and key.
 */
#include "test_util.h"

#include "report/html_int.h"

#include <math.h>
#include <zlib.h>

/* ------------------------------------------------------------- helpers */

static char *path_in(const char *name) {
  static char buf[8][512];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 512, "%s/%s", tmp, name);
  return p;
}

static void put_file(const char *name, const char *text) {
  assert_int_equal(tu_write(path_in(name), text, strlen(text)), 0);
}

/* Make a page from files in tmp; returns its text (caller frees) or NULL
 * with err set. */
static char *page(const char *const *files, size_t n, const etsim_report_html_opts_t *o,
                  etsim_error_t *err) {
  etsim_report_input_t in[8];
  for (size_t i = 0; i < n; i++) in[i] = (etsim_report_input_t){path_in(files[i]), NULL};
  char *out = path_in("page.html");
  unlink(out);
  if (etsim_report_html(out, in, n, o, err)) return NULL;
  size_t len;
  return (char *)tu_read(out, &len);
}

static size_t count(const char *s, const char *needle) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* No number the browser cannot read, anywhere. */
static void assert_finite_page(const char *s) {
  assert_null(strstr(s, "nan"));
  assert_null(strstr(s, "NaN"));
  assert_null(strstr(s, "inf\""));
  assert_null(strstr(s, "\"inf"));
}

/* --------------------------------------------------------------- tests */

static void test_numbers(void **state) {
  (void)state;
  char s[32];
  struct {
    double v;
    const char *want;
  } num[] = {{1284.181, "1284"}, {96.07, "96.07"}, {1.5e6, "1.5M"},         {50331648, "50.3M"},
             {0, "0"},           {12345, "12.3k"}, {0.0001234, "1.23e-04"}, {-2.5, "-2.5"},
             {NAN, "-"},         {INFINITY, "-"}};
  for (size_t i = 0; i < sizeof num / sizeof *num; i++) {
    etsim_report__num(s, sizeof s, num[i].v);
    assert_string_equal(s, num[i].want);
  }
  etsim_report__bytes(s, sizeof s, 50331648);
  assert_string_equal(s, "48 MiB");
  etsim_report__bytes(s, sizeof s, 1536);
  assert_string_equal(s, "1.5 KiB");
  etsim_report__bytes(s, sizeof s, 100);
  assert_string_equal(s, "100 B");
  rbuf_t b = {0};
  etsim_report__esc(&b, "a<b & \"c\" 'd'>");
  assert_string_equal(b.s, "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  etsim_free(b.s);
}

static int b64val(char c) {
  const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const char *p = strchr(t, c);
  return p && c ? (int)(p - t) : -1;
}

/* The heat map's PNG: decode base64, check the chunk CRCs, inflate, and
 * read the pixels: value 0 is viridis' first colour, the maximum its last. */
static void test_heat_png(void **state) {
  (void)state;
  double v[6] = {0, 1, 2, 3, 4, 5};
  const char *rn[2] = {"r0", "r1"}, *cn[3] = {"c0", "c1", "c2"};
  rbuf_t b = {0};
  etsim_report__heat(&b, &(rheat_t){"t", "T", NULL, "x", "y", "u", 2, 3, v, rn, cn, 0, 5, 0, 0});
  assert_false(b.oom);
  const char *p = strstr(b.s, "base64,");
  assert_non_null(p);
  p += 7;
  unsigned char png[4096];
  size_t n = 0;
  for (; *p != '"'; p += 4) {
    int q[4];
    for (int k = 0; k < 4; k++) q[k] = p[k] == '=' ? 0 : b64val(p[k]);
    TU_GE(q[0], 0);
    TU_GE(q[1], 0);
    TU_GE(q[2], 0);
    TU_GE(q[3], 0);
    uint32_t x = (uint32_t)q[0] << 18 | (uint32_t)q[1] << 12 | (uint32_t)q[2] << 6 | (uint32_t)q[3];
    png[n++] = (unsigned char)(x >> 16);
    if (p[2] != '=') png[n++] = (unsigned char)(x >> 8);
    if (p[3] != '=') png[n++] = (unsigned char)x;
  }
  static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  assert_memory_equal(png, sig, 8);
  unsigned char raw[64];
  uLongf raw_n = 0;
  for (size_t at = 8; at < n;) {
    uint32_t len = (uint32_t)png[at] << 24 | (uint32_t)png[at + 1] << 16 |
                   (uint32_t)png[at + 2] << 8 | png[at + 3];
    const unsigned char *type = png + at + 4, *data = png + at + 8;
    uint32_t crc = (uint32_t)data[len] << 24 | (uint32_t)data[len + 1] << 16 |
                   (uint32_t)data[len + 2] << 8 | data[len + 3];
    assert_int_equal(crc, (uint32_t)crc32(0, type, len + 4));
    if (!memcmp(type, "IHDR", 4)) {
      assert_int_equal(data[3], 3); /* width */
      assert_int_equal(data[7], 2); /* height */
      assert_int_equal(data[8], 8);
      assert_int_equal(data[9], 2); /* RGB */
    } else if (!memcmp(type, "IDAT", 4)) {
      raw_n = sizeof raw;
      assert_int_equal(uncompress(raw, &raw_n, data, len), Z_OK);
    }
    at += 12 + len;
  }
  assert_int_equal(raw_n, 2 * (1 + 9));
  assert_int_equal(raw[0], 0); /* filter byte */
  assert_int_equal(raw[1], 68);
  assert_int_equal(raw[2], 1);
  assert_int_equal(raw[3], 84);
  assert_int_equal(raw[10 + 7], 253); /* value 5 = the maximum: yellow */
  assert_int_equal(raw[10 + 8], 231);
  assert_int_equal(raw[10 + 9], 37);
  etsim_free(b.s);
}

/* Four NPUs, NPU 1 the slowest: it is named critical and its bar split. */
static const char *sim4 =
    "{\"total_ns\": 300000, \"wall_s\": 0.01, \"events\": 99,"
    " \"npus\": ["
    "{\"id\":0,\"finish_ns\":100000,\"compute_ns\":80000,\"exposed_comm_ns\":20000,"
    "\"coll_busy_ns_by_dim\":[30000,0],\"coll_exposed_ns_by_dim\":[20000,0]},"
    "{\"id\":1,\"finish_ns\":300000,\"compute_ns\":120000,\"exposed_comm_ns\":180000,"
    "\"coll_busy_ns_by_dim\":[150000,60000],\"coll_exposed_ns_by_dim\":[100000,60000]},"
    "{\"id\":2,\"finish_ns\":200000,\"compute_ns\":150000,\"exposed_comm_ns\":50000,"
    "\"coll_busy_ns_by_dim\":[60000,0],\"coll_exposed_ns_by_dim\":[50000,0]},"
    "{\"id\":3,\"finish_ns\":50000,\"compute_ns\":50000,\"exposed_comm_ns\":0,"
    "\"coll_busy_ns_by_dim\":[0,0],\"coll_exposed_ns_by_dim\":[0,0]}],"
    " \"by_type\": [{\"type\":\"all-reduce\",\"count\":8,\"bytes\":4096,"
    "\"exposed_ns_sum\":250000}],"
    " \"collectives\": [{\"npu\":1,\"node\":5,\"name\":\"ar\",\"type\":\"ALL_REDUCE\","
    "\"bytes\":1024,\"start_ns\":120000,\"end_ns\":300000}],"
    " \"links\": [{\"link\":\"NPU 1 -> switch (dim 1 Switch)\",\"bytes\":9,\"busy_fraction\":0.5},"
    "{\"link\":\"switch -> NPU 2 (dim 1 Switch)\",\"bytes\":9,\"busy_fraction\":0.25},"
    "{\"link\":\"NPU 0 -> NPU 1 (dim 0 Ring)\",\"bytes\":9,\"busy_fraction\":0.75}]}\n";

static void test_sim_page(void **state) {
  (void)state;
  put_file("sim.json", sim4);
  const char *f[1] = {"sim.json"};
  etsim_error_t err = {0};
  char *s = page(f, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "data-chart=\"sim-breakdown\""));
  assert_non_null(strstr(s, "data-chart=\"sim-finish\""));
  assert_non_null(strstr(s, "data-chart=\"sim-util\""));
  assert_non_null(strstr(s, "data-chart=\"sim-dims\""));
  assert_non_null(strstr(s, "data-chart=\"sim-timeline\""));
  assert_non_null(strstr(s, "critical: NPU 1, 300 \xc2\xb5s"));
  /* the critical NPU's bar: 120 us of compute, 180 exposed */
  assert_non_null(strstr(s, "<title>1: compute 120</title>"));
  assert_non_null(strstr(s, "<title>1: exposed communication 180</title>"));
  assert_non_null(strstr(s, "<title>3: compute 50</title>"));
  /* mean exposed all-reduce: 250000 ns / 4 NPUs = 62.5 us */
  assert_non_null(strstr(s, "mean NPU: exposed all-reduce 62.5"));
  /* per dimension: mean busy on dim 1 = 60000 / 4 ns = 15 us */
  assert_non_null(strstr(s, "dim 1: collectives running 15<"));
  /* links: the busiest first, and a heat map of dim 0 out, dim 1 out, dim 1 in */
  const char *l0 = strstr(s, "NPU 0 -&gt; NPU 1 (dim 0 Ring): busy 75<"),
             *l1 = strstr(s, "NPU 1 -&gt; switch (dim 1 Switch): busy 50<");
  assert_non_null(l0);
  assert_non_null(l1);
  TU_LT(l0 - s, l1 - s); /* offsets in the page */
  assert_non_null(strstr(s, "data-chart=\"sim-link-heat\""));
  assert_non_null(strstr(s, ">dim 0 out<"));
  assert_non_null(strstr(s, ">dim 1 in<"));
  assert_non_null(strstr(s, "etsim 0."));
  assert_finite_page(s);
  /* same input, same bytes */
  char *s2 = page(f, 1, NULL, &err);
  assert_non_null(s2);
  assert_string_equal(s, s2);
  free(s);
  free(s2);
}

/* 10,000 NPUs: 79 to a bar, 157 to a heat-map row; the file stays small. */
static void test_sim_groups(void **state) {
  (void)state;
  const size_t n = 10000, crit = 7777;
  size_t cap = n * 220 + 1000, k = 0;
  char *js = malloc(cap);
  assert_non_null(js);
  k += (size_t)snprintf(js + k, cap - k, "{\"total_ns\": 2000000, \"npus\": [");
  for (size_t i = 0; i < n; i++) {
    long fin = i == crit ? 2000000 : 1000000 + (long)((i * 7919) % 900000);
    k += (size_t)snprintf(js + k, cap - k,
                          "%s{\"id\":%zu,\"finish_ns\":%ld,\"compute_ns\":900000,"
                          "\"coll_busy_ns_by_dim\":[%zu,5000],\"coll_exposed_ns_by_dim\":[1,2]}",
                          i ? "," : "", i, fin, 1000 + i);
  }
  k += (size_t)snprintf(js + k, cap - k, "], \"by_type\": [], \"collectives\": []}\n");
  TU_LT(k, cap);
  assert_int_equal(tu_write(path_in("big.json"), js, k), 0);
  free(js);
  const char *f[1] = {"big.json"};
  etsim_error_t err = {0};
  char *s = page(f, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "10000 NPUs in 127 groups of 79"));
  assert_non_null(strstr(s, "critical: NPU 7777, 2000 \xc2\xb5s"));
  assert_non_null(strstr(s, "10000 NPUs in 64 rows of 157"));
  assert_non_null(strstr(s, "No collective was recorded"));
  /* group 98 holds NPUs 7742-7820: its bar is NPU 7777's */
  assert_non_null(
      strstr(s, "<title>7742: exposed communication 1100\nNPUs 7742-7820: slowest NPU 7777;"));
  TU_LT(strlen(s), 200 * 1024);
  assert_finite_page(s);
  free(s);
}

/* A network timeline with known integrals. */
static const char *tl =
    "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"args\":{\"name\":\"messages\"}},\n"
    "{\"ph\":\"b\",\"cat\":\"msg\",\"id\":0,\"pid\":9,\"tid\":1,\"ts\":0,\"name\":\"m\","
    "\"args\":{\"msg\":0,\"dst\":2,\"bytes\":1000,\"fct_us\":10,\"slowdown\":1.5}},\n"
    "{\"ph\":\"e\",\"cat\":\"msg\",\"id\":0,\"pid\":9,\"tid\":1,\"ts\":10,\"name\":\"m\"},\n"
    "{\"ph\":\"b\",\"cat\":\"msg\",\"id\":1,\"pid\":9,\"tid\":1,\"ts\":0,\"name\":\"m\","
    "\"args\":{\"msg\":1,\"dst\":2,\"bytes\":1000,\"fct_us\":12,\"slowdown\":4}},\n"
    "{\"ph\":\"b\",\"cat\":\"msg\",\"id\":2,\"pid\":9,\"tid\":1,\"ts\":0,\"name\":\"m\","
    "\"args\":{\"msg\":2,\"dst\":2,\"bytes\":1000,\"fct_us\":20,\"slowdown\":2.5}},\n"
    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4,\"args\":{\"name\":\"switch 3\"}},\n"
    "{\"ph\":\"C\",\"pid\":4,\"name\":\"tx Gb/s\",\"ts\":0,\"args\":{\"p1>0\":100,\"p2>1\":40}},\n"
    "{\"ph\":\"C\",\"pid\":4,\"name\":\"queue KB\",\"ts\":0,\"args\":{\"p1>0\":12,\"p2>1\":0}},\n"
    "{\"ph\":\"C\",\"pid\":4,\"name\":\"paused %\",\"ts\":0,\"args\":{\"p1>0\":50,\"p2>1\":0}},\n"
    "{\"ph\":\"C\",\"pid\":4,\"name\":\"tx Gb/s\",\"ts\":10,\"args\":{\"p1>0\":0,\"p2>1\":40}},\n"
    "{\"ph\":\"C\",\"pid\":4,\"name\":\"paused %\",\"ts\":10,\"args\":{\"p1>0\":0,\"p2>1\":0}},\n"
    "{\"ph\":\"C\",\"pid\":4,\"name\":\"queue KB\",\"ts\":20,\"args\":{\"p1>0\":0,\"p2>1\":0}}\n"
    "]}\n";

static void test_net_timeline(void **state) {
  (void)state;
  put_file("tl.json", tl);
  const char *f[1] = {"tl.json"};
  etsim_error_t err = {0};
  char *s = page(f, 1, NULL, &err);
  assert_non_null(s);
  /* 3 messages; slowdowns 1.5, 2.5, 4: median 2.5, p99 the largest */
  assert_non_null(strstr(s, "<dt>messages completed</dt><dd>3</dd>"));
  assert_non_null(strstr(s, "<dt>slowdown median</dt><dd>2.5</dd>"));
  assert_non_null(strstr(s, "<dt>slowdown p99</dt><dd>4</dd>"));
  /* ends at 20 us (the last counter and the last completion) */
  assert_non_null(strstr(s, "<dt>span</dt><dd>20 \xc2\xb5s</dd>"));
  /* 50 % paused for 10 us = 5 us; the largest queue 12 KB */
  assert_non_null(strstr(s, "<dt>paused (all ports)</dt><dd>5 \xc2\xb5s</dd>"));
  assert_non_null(strstr(s, "<dt>largest queue</dt><dd>12 KB</dd>"));
  /* ports are named "switch 3 -> 0"; the one that sent more (100 Gb/s for
   * 10 us against 40 Gb/s for 20 us) comes first in the legends */
  const char *a = strstr(s, "switch 3 \xe2\x86\x92 0"), *b = strstr(s, "switch 3 \xe2\x86\x92 1");
  assert_non_null(a);
  assert_non_null(b);
  TU_LT(a - s, b - s);
  assert_non_null(strstr(s, "data-chart=\"net-fct-cdf\""));
  assert_non_null(strstr(s, "data-chart=\"net-queue\""));
  assert_non_null(strstr(s, "data-chart=\"net-pause\""));
  assert_non_null(strstr(s, "data-chart=\"net-heat\""));
  assert_finite_page(s);
  free(s);
  /* cut short: named with the events read */
  char cut[256];
  snprintf(cut, sizeof cut, "%.*s", 200, tl);
  put_file("cut.json", cut);
  const char *g[1] = {"cut.json"};
  assert_null(page(g, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "cut.json: traceEvents"));
}

/* A sweep of 200 seeded points: the front drawn is the brute-force front. */
static void test_sweep_pareto(void **state) {
  (void)state;
  FILE *fp = fopen(path_in("points.jsonl"), "w");
  assert_non_null(fp);
  double a[200], c[200];
  uint64_t x = 12345;
  for (int i = 0; i < 200; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    int bw = 25 << (i % 5), tp = 1 << (i / 5 % 4);
    a[i] = 1000.0 / bw + 50.0 / tp + (double)(x >> 40) / (double)(1ull << 24) * 30;
    c[i] = bw * 0.1 + tp + (double)(x >> 20 & 1023) / 100;
    fprintf(fp,
            "{\"bw\": %d, \"tp\": %d, \"cc\": \"%s\", \"iteration_us\": %.6f, \"cost\": %.6f}\n",
            bw, tp, i % 2 ? "dcqcn" : "hpcc", a[i], c[i]);
  }
  fprintf(fp,
          "{\"bw\": 25, \"tp\": 1, \"cc\": \"hpcc\", \"status\": \"failed\", \"error\": "
          "\"deadlock at t=5 ns\"}\n");
  fclose(fp);
  size_t front = 0;
  for (int i = 0; i < 200; i++) {
    int dominated = 0;
    for (int j = 0; j < 200 && !dominated; j++)
      dominated = j != i && a[j] <= a[i] && c[j] <= c[i] && (a[j] < a[i] || c[j] < c[i]);
    front += !dominated;
  }
  char want[96];
  snprintf(want, sizeof want, "%zu of 200 points are on the front", front);
  const char *f[1] = {"points.jsonl"};
  etsim_error_t err = {0};
  char *s = page(f, 1, &(etsim_report_html_opts_t){.pareto = "iteration_us,cost"}, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, want));
  assert_non_null(strstr(s, "<dt>failed</dt><dd>1</dd>"));
  assert_non_null(strstr(s, "deadlock at t=5 ns"));
  /* guessed: bw, tp and cc are axes; x = bw (5 values), lines per cc */
  assert_non_null(strstr(s, "<dt>axes</dt><dd>3</dd>"));
  assert_non_null(strstr(s, "<dt>results</dt><dd>2</dd>"));
  assert_non_null(strstr(s, "Axes: bw (5 values), tp (4 values), cc (2 values)."));
  assert_non_null(strstr(s, "iteration_us over bw"));
  assert_non_null(strstr(s, "cc = dcqcn"));
  assert_int_equal(count(s, "data-chart=\"sweep-line\""), 2);
  assert_int_equal(count(s, "data-chart=\"sweep-pareto\""), 1);
  assert_finite_page(s);
  free(s);
  /* maximising the second result flips which points are on the front */
  size_t front2 = 0;
  for (int i = 0; i < 200; i++) {
    int dominated = 0;
    for (int j = 0; j < 200 && !dominated; j++)
      dominated = j != i && a[j] <= a[i] && c[j] >= c[i] && (a[j] < a[i] || c[j] > c[i]);
    front2 += !dominated;
  }
  snprintf(want, sizeof want, "%zu of 200 points are on the front", front2);
  s = page(f, 1, &(etsim_report_html_opts_t){.pareto = "iteration_us,cost:max"}, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, want));
  free(s);
  /* an unknown column is named */
  assert_null(page(f, 1, &(etsim_report_html_opts_t){.pareto = "iteration_us,price"}, &err));
  assert_non_null(strstr(err.msg, "no column 'price'"));
  /* the same points as CSV with axis./result. columns */
  fp = fopen(path_in("points.csv"), "w");
  fprintf(fp, "axis.bw,axis.policy,result.t_us\n25,\"a,b\",3\n50,\"a,b\",2\n100,c,1.5\n");
  fclose(fp);
  const char *g[1] = {"points.csv"};
  s = page(g, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "Axes: bw (3 values), policy (2 values)."));
  assert_non_null(strstr(s, "from the rows&#39; &quot;axes&quot;"));
  assert_non_null(strstr(s, "policy = a,b"));
  free(s);
}

/* Points as `etsim sweep` writes them: points.jsonl rows {"point", "id",
 * "status", "error", "axes": {...}, "results": {...}} (a failed point has
 * every result null), and points.csv, whose roles only sweep.json beside
 * it names.  Times and sizes get units by their suffix, chosen by the
 * column's largest value; a result equal at every point gets no chart. */
static void test_sweep_rows(void **state) {
  (void)state;
  static const char *cc[] = {"none", "dcqcn", "hpcc"};
  static const int buf[] = {1, 4, 16};
  FILE *fp = fopen(path_in("points.jsonl"), "w"), *csv = fopen(path_in("points.csv"), "w");
  assert_non_null(fp);
  assert_non_null(csv);
  fprintf(csv,
          "point,id,status,error,cc,netsim.BUFFER_SIZE,flows,last_done_ns,"
          "max_buffer_bytes,pauses,peak_mem_bytes\n");
  int p = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++, p++) {
      /* last done: 668,091 ns and up by 100,000 ns a step; the top, 1,468,091 ns, is
       * 1468 us: the column is in us.  Buffer: 342,264 B and up by 10 KiB; KiB. */
      long last = 668091 + 100000L * p, bytes = 342264 + 10240L * p;
      if (p == 8) {
        fprintf(fp,
                "{\"point\": 8, \"id\": \"a8\", \"status\": \"failed\", \"error\": \"sim: "
                "deadlock\", \"axes\": {\"cc\": \"%s\", \"netsim.BUFFER_SIZE\": %d}, "
                "\"results\": {\"flows\": null, \"last_done_ns\": null, \"max_buffer_bytes\": "
                "null, \"pauses\": null, \"peak_mem_bytes\": null}}\n",
                cc[i], buf[j]);
        fprintf(csv, "8,a8,failed,sim: deadlock,%s,%d,,,,,\n", cc[i], buf[j]);
        continue;
      }
      fprintf(fp,
              "{\"point\": %d, \"id\": \"a%d\", \"status\": \"ok\", \"error\": null, "
              "\"axes\": {\"cc\": \"%s\", \"netsim.BUFFER_SIZE\": %d}, \"results\": "
              "{\"flows\": 8, \"last_done_ns\": %ld, \"max_buffer_bytes\": %ld, \"pauses\": "
              "%d, \"peak_mem_bytes\": null}}\n",
              p, p, cc[i], buf[j], last, bytes, 200 - 20 * p);
      fprintf(csv, "%d,a%d,ok,,%s,%d,8,%ld,%ld,%d,\n", p, p, cc[i], buf[j], last, bytes,
              200 - 20 * p);
    }
  fclose(fp);
  fclose(csv);
  const char *f[1] = {"points.jsonl"}, *g[1] = {"points.csv"};
  etsim_error_t err = {0};
  char *s = page(f, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "<dt>failed</dt><dd>1</dd>"));
  assert_non_null(strstr(s, "sim: deadlock"));
  assert_non_null(strstr(s, "Axes: cc (3 values), netsim.BUFFER_SIZE (3 values)."));
  assert_non_null(strstr(s, "<dt>results</dt><dd>4</dd>")); /* peak_mem_bytes: always null */
  /* units on the axes; each value in the table in its own unit */
  assert_non_null(strstr(s, ">last_done (\xc2\xb5s)<"));
  assert_non_null(strstr(s, ">max_buffer (KiB)<"));
  assert_non_null(strstr(s, "<td>668 \xc2\xb5s</td>"));
  assert_non_null(strstr(s, "<td>334 KiB</td>")); /* 342,264 B */
  assert_non_null(strstr(s, "<td>60</td>"));      /* pauses: 200 - 20 x 7 */
  /* flows is 8 at every point: in the table, not drawn */
  assert_non_null(strstr(s, "<td>8</td><td class=\"l\">the same at every point</td>"));
  assert_null(strstr(s, "flows over"));
  assert_int_equal(count(s, "data-chart=\"sweep-line\""), 3);
  /* the front: last done and max buffer both grow with the point, so the
   * first point beats every other: a front of one */
  assert_non_null(strstr(s, "1 of 8 points are on the front"));
  assert_finite_page(s);
  free(s);
  /* points.csv: its header does not say which columns are results... */
  s = page(g, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "guessed"));
  free(s);
  /* ...sweep.json beside it does; a file naming other axes is not believed */
  put_file("sweep.json",
           "{\"columns\": {\"axes\": [\"cc\", \"buffer\"], \"results\": "
           "[\"flows\"]}}\n");
  s = page(g, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "guessed"));
  free(s);
  put_file("sweep.json",
           "{\"spec\": \"x.yaml\", \"columns\": {\"axes\": [\"cc\", \"netsim.BUFFER_SIZE\"], "
           "\"results\": [\"flows\", \"last_done_ns\", \"max_buffer_bytes\", \"pauses\", "
           "\"peak_mem_bytes\"]}}\n");
  s = page(g, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "as sweep.json beside the points names them"));
  assert_non_null(strstr(s, "Axes: cc (3 values), netsim.BUFFER_SIZE (3 values)."));
  assert_non_null(strstr(s, "<dt>results</dt><dd>4</dd>"));
  assert_non_null(strstr(s, "<td>668 \xc2\xb5s</td>"));
  assert_non_null(strstr(s, "1 of 8 points are on the front"));
  free(s);
  unlink(path_in("sweep.json"));
}

/* A link from a page in a/b to a timeline in a/c is "../c/t.json". */
static void test_relative_link(void **state) {
  (void)state;
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/a/b' '%s/a/c'", tmp, tmp);
  assert_int_equal(system(cmd), 0);
  put_file("a/sim.json", sim4);
  put_file("a/c/t.json",
           "{\"traceEvents\":[{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\","
           "\"args\":{\"name\":\"NPU 0\"}}]}\n");
  etsim_report_input_t in[2] = {{path_in("a/sim.json"), "run"}, {path_in("a/c/t.json"), NULL}};
  etsim_error_t err = {0};
  assert_int_equal(etsim_report_html(path_in("a/b/r.html"), in, 2, NULL, &err), 0);
  size_t len;
  char *s = (char *)tu_read(path_in("a/b/r.html"), &len);
  assert_non_null(s);
  assert_non_null(strstr(s, "<a href=\"../c/t.json\">"));
  assert_non_null(strstr(s, "Simulation: run"));
  free(s);
}

static void test_synth_shares(void **state) {
  (void)state;
  put_file("ev.json",
           "{\"n_real\": 4, \"n_generated\": 4, \"validity\": 1, \"w1_layers\": 0.5, "
           "\"w1_nodes\": 1, \"w1_edges\": 2, \"mmd_layer_size\": 0.01, \"mmd_in_degree\": 0.02, "
           "\"mmd_out_degree\": 0.03, \"histograms\": {\"layers\": {\"lo\": [0, 1, 2], "
           "\"width\": 1, \"real\": [0, 2, 2], \"generated\": [0, 1, 3]}, \"edges\": {\"lo\": "
           "[0, 50, 100], \"width\": 50, \"real\": [4, 0, 0], \"generated\": [2, 2, 0]}}}\n");
  const char *f[1] = {"ev.json"};
  etsim_error_t err = {0};
  char *s = page(f, 1, NULL, &err);
  assert_non_null(s);
  assert_non_null(strstr(s, "<title>1: real 50</title>"));
  assert_non_null(strstr(s, "<title>2: generated 75</title>"));
  /* bins of 50; the empty top bin is dropped */
  assert_non_null(strstr(s, "<title>50-99: generated 50</title>"));
  assert_null(strstr(s, "100-149"));
  assert_non_null(strstr(s, "data-chart=\"synth-layers\""));
  assert_non_null(strstr(s, "data-chart=\"synth-edges\""));
  free(s);
  put_file("ev2.json",
           "{\"n_real\": 4, \"validity\": 1, \"w1_layers\": 0.5, \"histograms\": "
           "{\"layers\": {\"lo\": [0, 1], \"real\": [1]}}}\n");
  const char *g[1] = {"ev2.json"};
  assert_null(page(g, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "ev2.json: histograms.layers:"));
}

static void test_bad_input(void **state) {
  (void)state;
  etsim_error_t err = {0};
  put_file("s.json",
           "{\"total_ns\": 10, \"npus\": [{\"finish_ns\": 10, \"compute_ns\": 1}, "
           "{\"finish_ns\": 10, \"compute_ns\": 1}, {\"compute_ns\": 1}]}\n");
  const char *f1[1] = {"s.json"};
  assert_null(page(f1, 1, NULL, &err));
  assert_int_equal(err.code, ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "s.json: npus[2].finish_ns: missing"));
  put_file("s2.json", "{\"total_ns\": 10, \"npus\": [{\"finish_ns\": \"x\", \"compute_ns\": 1}]}");
  const char *f2[1] = {"s2.json"};
  assert_null(page(f2, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "s2.json: npus[0].finish_ns: not a number"));
  put_file("o.json", "{\"foo\": 1}");
  const char *f3[1] = {"o.json"};
  assert_null(page(f3, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "o.json: not a result etsim report knows"));
  put_file("j.json", "{\"npus\": [1, 2,}");
  const char *f4[1] = {"j.json"};
  assert_null(page(f4, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "j.json:1:"));
  put_file("p.csv", "a,b\n1,2\n3\n");
  const char *f5[1] = {"p.csv"};
  assert_null(page(f5, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "p.csv:3: wrong number of fields"));
  put_file("q.jsonl", "{\"a\": 1}\n[1]\n");
  const char *f6[1] = {"q.jsonl"};
  assert_null(page(f6, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "q.jsonl:2: not a JSON object"));
  /* binary data is no result: named with its offset, not read past */
  assert_int_equal(tu_write(path_in("z.csv"), "a,b\n1,2\n3,\0\n", 12), 0);
  const char *fz[1] = {"z.csv"};
  assert_null(page(fz, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "z.csv: offset 10: a NUL byte"));
  const char *f7[1] = {"missing.json"};
  assert_null(page(f7, 1, NULL, &err));
  assert_int_equal(err.code, ETSIM_ENOTFOUND); /* etsim_input_check's code for a missing file */
  put_file("plan.json",
           "{\"etsim_shard_plan\": 2, \"ranks\": 4, \"tables\": [{\"type\": \"tw\", "
           "\"shards\": [{\"rank\": 9, \"ms\": 1}]}]}");
  const char *f8[1] = {"plan.json"};
  assert_null(page(f8, 1, NULL, &err));
  assert_non_null(strstr(err.msg, "plan.json: tables[0].shards[0].rank: 9 is not a rank of 4"));
  /* a failed page leaves nothing behind */
  assert_int_not_equal(access(path_in("page.html"), F_OK), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_numbers),      cmocka_unit_test(test_heat_png),
      cmocka_unit_test(test_sim_page),     cmocka_unit_test(test_sim_groups),
      cmocka_unit_test(test_net_timeline), cmocka_unit_test(test_sweep_pareto),
      cmocka_unit_test(test_sweep_rows),   cmocka_unit_test(test_relative_link),
      cmocka_unit_test(test_synth_shares), cmocka_unit_test(test_bad_input),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}

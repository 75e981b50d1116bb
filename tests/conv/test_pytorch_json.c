/*
 * test_pytorch_json.c — the converter's JSON layer: the element parser
 * (values, escapes, every rejection), Python repr() text (checked against
 * what CPython prints for the same values), and the streaming reader across
 * buffer refills, with error line:column far into a file.
 */
#include "test_util.h"

#include "conv/pytorch_int.h"

static ptv_parser_t P;

static int parse(const char *text, ptv_t *out, size_t *pos, const char **what) {
  static char buf[1 << 16];
  size_t n = strlen(text);
  memcpy(buf, text, n + 1);
  return etsim_conv__pt_value_parse(&P, buf, n, out, pos, what);
}

static const char *repr(const char *text) {
  static ptr_buf_t b;
  ptv_t v;
  size_t pos;
  const char *what;
  assert_int_equal(parse(text, &v, &pos, &what), 0);
  etsim_conv__pt_repr_reset(&b);
  assert_int_equal(etsim_conv__pt_repr(&b, &v), 0);
  return b.data;
}

static void test_values(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  ptv_t v;
  size_t pos;
  const char *what;
  assert_int_equal(parse(" {\"a\": [1, -2, 3.5, true, false, null], \"b\": "
                         "\"x\\u00e9\\n\", \"a\": 0} ",
                         &v, &pos, &what),
                   0);
  assert_int_equal(v.t, PTV_OBJ);
  assert_int_equal(v.n, 3);
  const ptv_t *a = etsim_conv__pt_value_get(&v, "a"); /* the first of repeated keys */
  assert_int_equal(ptv_arr_len(a), 6);
  assert_int_equal(ptv_at(a, 0)->u.i, 1);
  assert_int_equal(ptv_at(a, 1)->u.i, -2);
  assert_int_equal(ptv_at(a, 2)->t, PTV_REAL);
  TU_EQ(ptv_at(a, 2)->u.d, 3.5);
  assert_int_equal(ptv_at(a, 3)->t, PTV_TRUE);
  assert_int_equal(ptv_at(a, 5)->t, PTV_NULL);
  assert_string_equal(ptv_str(etsim_conv__pt_value_get(&v, "b")), "x\xc3\xa9\n");
  assert_int_equal(etsim_conv__pt_value_get(&v, "b")->n, 4);
  assert_null(etsim_conv__pt_value_get(&v, "zz"));
  /* int64 limits stay integers; beyond them become reals. */
  assert_int_equal(parse("[9223372036854775807, -9223372036854775808, "
                         "9223372036854775808]",
                         &v, &pos, &what),
                   0);
  assert_int_equal(ptv_at(&v, 0)->t, PTV_INT);
  TU_EQ(ptv_at(&v, 0)->u.i, INT64_MAX);
  assert_int_equal(ptv_at(&v, 1)->t, PTV_INT);
  TU_EQ(ptv_at(&v, 1)->u.i, INT64_MIN);
  assert_int_equal(ptv_at(&v, 2)->t, PTV_REAL);
  /* A surrogate pair is one 4-byte UTF-8 character. */
  assert_int_equal(parse("\"\\ud83d\\ude00\"", &v, &pos, &what), 0);
  assert_string_equal(v.u.s, "\xf0\x9f\x98\x80");
  etsim_conv__pt_value_parser_free(&P);
}

static void test_rejects(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  static const struct {
    const char *text;
    size_t pos;
    const char *what;
  } bad[] = {
      {"[1, 2,]", 6, "unexpected character"},
      {"{\"a\" 1}", 5, "expected ':'"},
      {"{1: 2}", 1, "expected a string"},
      {"[01]", 2, "expected ','"},
      {"[1.]", 1, "invalid number"},
      {"[-]", 1, "invalid number"},
      {"\"a\tb\"", 2, "control character"},
      {"\"\\x\"", 1, "invalid escape"},
      {"\"\\ud800x\"", 1, "surrogate"},
      {"\"\\u12\"", 1, "invalid \\u"},
      {"[tru]", 1, "invalid literal"},
      {"[NaN]", 1, "unexpected character"},
      {"[1] 2", 4, "after the value"},
      {"\"abc", 0, "unterminated"},
      {"", 0, "end of value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ptv_t v;
    size_t pos = 999;
    const char *what = "";
    int rc = parse(bad[i].text, &v, &pos, &what);
    if (rc != ETSIM_EFORMAT || pos != bad[i].pos || !strstr(what, bad[i].what))
      print_message("'%s': rc %d pos %zu '%s'\n", bad[i].text, rc, pos, what);
    assert_int_equal(rc, ETSIM_EFORMAT);
    assert_int_equal(pos, bad[i].pos);
    TU_CONTAINS(what, bad[i].what);
  }
  /* Nesting is bounded, not a stack overflow. */
  char deep[1200];
  memset(deep, '[', 1000);
  deep[1000] = '\0';
  ptv_t v;
  size_t pos;
  const char *what;
  assert_int_equal(parse(deep, &v, &pos, &what), ETSIM_EFORMAT);
  TU_CONTAINS(what, "nesting");
  etsim_conv__pt_value_parser_free(&P);
}

/* Expected strings are what CPython 3 prints for repr(json.loads(text)). */
static void test_repr(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  assert_string_equal(repr("[1, -2, true, false, null]"), "[1, -2, True, False, None]");
  assert_string_equal(repr("[0.5, 1.0, 0.1, -0.0, 100.0, 1e-05, 0.0001]"),
                      "[0.5, 1.0, 0.1, -0.0, 100.0, 1e-05, 0.0001]");
  assert_string_equal(repr("[1e16, 1e15, 123456789012345678.0, 1.5e300, 2.5e-7]"),
                      "[1e+16, 1000000000000000.0, 1.2345678901234568e+17, "
                      "1.5e+300, 2.5e-07]");
  assert_string_equal(repr("[\"it's\", \"say \\\"hi\\\"\", \"both ' \\\"\", \"a\\\\b\\n\"]"),
                      "[\"it's\", 'say \"hi\"', 'both \\' \"', 'a\\\\b\\n']");
  assert_string_equal(repr("{\"k\": [[]], \"j\": {}}"), "{'k': [[]], 'j': {}}");
  assert_string_equal(repr("\"\\u0001\""), "'\\x01'");
  etsim_conv__pt_value_parser_free(&P);
}

/* ------------------------------------------------------- streaming */

typedef struct {
  uint64_t n, last_line;
  size_t big_len;
} seen_t;

static int on_elem(void *u, const ptv_t *v, uint64_t index, const ptj_loc_t *loc,
                   etsim_error_t *err) {
  (void)err;
  seen_t *s = u;
  assert_int_equal(ptv_i(etsim_conv__pt_value_get(v, "i")), (int64_t)index);
  const char *big = ptv_str(etsim_conv__pt_value_get(v, "big"));
  if (big) s->big_len = strlen(big);
  s->n++;
  s->last_line = loc->line;
  return 0;
}

static void test_stream(void **state) {
  (void)state;
  /* 3,000 one-line elements around one 700 KB string (larger than the read
   * chunk, so the buffer must grow and refill mid-element). */
  char path[4200];
  snprintf(path, sizeof path, "%s/stream.json", tmp);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fprintf(fp, "{\"schema\": \"x\",\n\"nodes\": [\n");
  for (int i = 0; i < 3000; i++) {
    fprintf(fp, "%s{\"i\": %d", i ? ",\n" : "", i);
    if (i == 1500) {
      fputs(", \"big\": \"", fp);
      for (int k = 0; k < 700000; k++) fputc('a' + k % 26, fp);
      fputc('"', fp);
    }
    fputc('}', fp);
  }
  fprintf(fp, "\n], \"tail\": 1}\n");
  fclose(fp);
  seen_t s = {0};
  etsim_error_t err = {0};
  uint64_t bytes = 0;
  int found = 0;
  int rc = etsim_conv__pt_json_stream(path, "nodes", NULL, on_elem, &s, NULL, &bytes, &found, &err);
  TU_OK(rc, err);
  assert_int_equal(found, 1);
  assert_int_equal(s.n, 3000);
  assert_int_equal(s.big_len, 700000);
  assert_int_equal(s.last_line, 3002); /* element i sits on line i + 3 */

  /* The same through gzip. */
  char cmd[8600];
  snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s.gz'", path, path);
  assert_int_equal(system(cmd), 0);
  char gz[4300];
  snprintf(gz, sizeof gz, "%s.gz", path);
  memset(&s, 0, sizeof s);
  assert_int_equal(
      etsim_conv__pt_json_stream(gz, "nodes", NULL, on_elem, &s, NULL, NULL, NULL, &err), 0);
  assert_int_equal(s.n, 3000);

  /* An error on line 2,503 is reported there, with its column. */
  fp = fopen(path, "w");
  fprintf(fp, "{\"nodes\": [\n");
  for (int i = 0; i < 3000; i++)
    fprintf(fp, "%s{\"i\": %d%s}", i ? ",\n" : "", i, i == 2501 ? ", \"x\": tru" : "");
  fprintf(fp, "]}");
  fclose(fp);
  memset(&s, 0, sizeof s);
  rc = etsim_conv__pt_json_stream(path, "nodes", NULL, on_elem, &s, NULL, NULL, NULL, &err);
  assert_int_equal(rc, ETSIM_EFORMAT);
  char want[4300];
  snprintf(want, sizeof want, "%s:2503:18: malformed JSON: invalid literal", path);
  assert_string_equal(err.msg, want);
  assert_int_equal(s.n, 2501);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_repr),
      cmocka_unit_test(test_stream),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}

/*
 * test_pytorch_scan.c — pass 1's fast path (pytorch_scan.c) against the
 * tree parser it stands in for: the same fields for every node it takes,
 * a decline for everything it must not take (checked on a list and on
 * thousands of seeded random mutations of a real node), the stream's
 * hand-off between the fast and the tree path across buffer refills, and
 * whole conversions that give the same bytes with the fast path on and off.
 */
#include "test_util.h"

#include "conv/pytorch_conv_int.h"
#include "etsim/convpt.h"

/* A node as resnet_2gpu_et writes it (nested inputs, 7 attrs). */
static const char *const REAL_NODE =
    "{\"id\": 7134, \"name\": \"aten::narrow\", \"ctrl_deps\": 7105, "
    "\"inputs\": {\"values\": [[426, 435, 0, 53120, 4, \"cuda:1\"], 0, 640, "
    "256], \"shapes\": [[53120], [], [], []], \"types\": [\"Tensor(float)\", "
    "\"Int\", \"Int\", \"Int\"]}, \"outputs\": {\"values\": [[2601, 435, 640, "
    "256, 4, \"cuda:1\"]], \"shapes\": [[256]], \"types\": "
    "[\"Tensor(float)\"]}, \"attrs\": [{\"name\": \"rf_id\", \"type\": "
    "\"uint64\", \"value\": 5001}, {\"name\": \"fw_parent\", \"type\": "
    "\"uint64\", \"value\": 0}, {\"name\": \"seq_id\", \"type\": \"int64\", "
    "\"value\": -1}, {\"name\": \"scope\", \"type\": \"uint64\", \"value\": "
    "0}, {\"name\": \"tid\", \"type\": \"uint64\", \"value\": 1}, {\"name\": "
    "\"fw_tid\", \"type\": \"uint64\", \"value\": 0}, {\"name\": "
    "\"op_schema\", \"type\": \"string\", \"value\": \"aten::narrow(Tensor(a) "
    "self, int dim, SymInt start, SymInt length) -> Tensor(a)\"}]}";

static ptv_parser_t P;
static char tree_buf[1 << 17], scan_buf[1 << 17];

/* The field as the tree path finds it (NULL when absent). */
static const ptv_t *tree_attr(const ptv_t *n, const char *name) {
  const ptv_t *attrs = etsim_conv__pt_value_get(n, "attrs");
  for (size_t i = 0; i < ptv_arr_len(attrs); i++) {
    const ptv_t *a = ptv_at(attrs, i);
    const char *nm = ptv_str(etsim_conv__pt_value_get(a, "name"));
    const ptv_t *v = etsim_conv__pt_value_get(a, "value");
    if (nm && v && strcmp(nm, name) == 0) return v;
  }
  return NULL;
}

/* A scanned field equals the tree's: presence, type, and scalar value. */
static void same(const char *what, uint32_t have, uint32_t bit, const ptv_t *scan,
                 const ptv_t *tree) {
  if (!(have & bit) != !tree)
    fail_msg("%s: scan %s, tree %s", what, have & bit ? "has it" : "lacks it",
             tree ? "has it" : "lacks it");
  if (!tree) return;
  if (scan->t != tree->t) fail_msg("%s: type %u vs %u", what, scan->t, tree->t);
  switch (tree->t) {
    case PTV_INT:
      assert_int_equal(scan->u.i, tree->u.i);
      break;
    case PTV_REAL:
      TU_EQ(scan->u.d, tree->u.d);
      break;
    case PTV_STR:
      assert_int_equal(scan->n, tree->n);
      assert_memory_equal(scan->u.s, tree->u.s, tree->n);
      break;
    default:
      break;
  }
}

/* Scan text[0..len); when the scanner takes it, the tree parser must take
 * the same bytes and find the same fields.  Returns 1 when taken. */
static int check(const char *text, size_t len) {
  TU_LT(len, sizeof scan_buf);
  memcpy(scan_buf, text, len);
  scan_buf[len] = '\0';
  pts_node_t s;
  size_t used = 0;
  if (etsim_conv__pt_scan_host_node(scan_buf, &s, &used) != 0) return 0;
  TU_LE(used, len);
  memcpy(tree_buf, text, used);
  tree_buf[used] = '\0';
  ptv_t n;
  size_t pos = 0;
  const char *what = "";
  int rc = etsim_conv__pt_value_parse(&P, tree_buf, used, &n, &pos, &what);
  if (rc)
    fail_msg("scanner took %.*s but the tree parser says %s at %zu", (int)used, text, what, pos);
  assert_int_equal(n.t, PTV_OBJ);
  same("id", s.have, PTS_ID, &s.id, etsim_conv__pt_value_get(&n, "id"));
  same("name", s.have, PTS_NAME, &s.name, etsim_conv__pt_value_get(&n, "name"));
  same("ctrl_deps", s.have, PTS_CTRL_DEPS, &s.ctrl_deps, etsim_conv__pt_value_get(&n, "ctrl_deps"));
  same("parent", s.have, PTS_PARENT, &s.parent, etsim_conv__pt_value_get(&n, "parent"));
  same("inputs", s.have, PTS_INPUTS, &s.inputs, etsim_conv__pt_value_get(&n, "inputs"));
  same("outputs", s.have, PTS_OUTPUTS, &s.outputs, etsim_conv__pt_value_get(&n, "outputs"));
  same("attrs", s.have, PTS_ATTRS, &s.attrs, etsim_conv__pt_value_get(&n, "attrs"));
  same("ts", s.have, PTS_TS, &s.ts, etsim_conv__pt_value_get(&n, "ts"));
  same("inclusive_dur", s.have, PTS_DUR, &s.dur, etsim_conv__pt_value_get(&n, "inclusive_dur"));
  same("cat", s.have, PTS_CAT, &s.cat, etsim_conv__pt_value_get(&n, "cat"));
  const ptv_t *in = etsim_conv__pt_value_get(&n, "inputs"),
              *out = etsim_conv__pt_value_get(&n, "outputs");
  same("inputs.values", s.have, PTS_IN_VALUES, &s.in_values,
       etsim_conv__pt_value_get(in, "values"));
  same("inputs.types", s.have, PTS_IN_TYPES, &s.in_types, etsim_conv__pt_value_get(in, "types"));
  same("outputs.values", s.have, PTS_OUT_VALUES, &s.out_values,
       etsim_conv__pt_value_get(out, "values"));
  same("outputs.types", s.have, PTS_OUT_TYPES, &s.out_types,
       etsim_conv__pt_value_get(out, "types"));
  if (ptv_is_arr(etsim_conv__pt_value_get(&n, "attrs"))) {
    same("rf_id", s.have, PTS_RF_ID, &s.rf_id, tree_attr(&n, "rf_id"));
    same("op_schema", s.have, PTS_OP_SCHEMA, &s.op_schema, tree_attr(&n, "op_schema"));
    same("kernel_backend", s.have, PTS_KERNEL_BACKEND, &s.kernel_backend,
         tree_attr(&n, "kernel_backend"));
  }
  return 1;
}

static int check_str(const char *text) { return check(text, strlen(text)); }

static void test_fields(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  assert_true(check_str(REAL_NODE));
  pts_node_t s;
  size_t used;
  memcpy(scan_buf, REAL_NODE, strlen(REAL_NODE) + 1);
  assert_int_equal(etsim_conv__pt_scan_host_node(scan_buf, &s, &used), 0);
  assert_int_equal(used, strlen(REAL_NODE));
  assert_int_equal(s.id.u.i, 7134);
  assert_int_equal(s.ctrl_deps.u.i, 7105);
  assert_int_equal(s.rf_id.u.i, 5001);
  assert_int_equal(s.name.n, 12);
  assert_memory_equal(s.name.u.s, "aten::narrow", 12);
  assert_int_equal(s.in_values.t, PTV_ARR);
  assert_int_equal(s.op_schema.n, strlen("aten::narrow(Tensor(a) self, int "
                                         "dim, SymInt start, SymInt length) "
                                         "-> Tensor(a)"));
  static const char *const ok[] = {
      /* Other white space and key orders; trailing bytes not read. */
      "{ \"attrs\" :[ ] ,\t\"name\"\r\n:\"a\", \"id\":0 }",
      "{\"id\": 1, \"name\": \"x\"}, {\"id\": 2}",
      "{}",
      /* The first of repeated keys, as etsim_conv__pt_value_get. */
      "{\"id\": 1, \"id\": 2, \"name\": \"a\", \"name\": 3, \"ctrl_deps\": "
      "null, \"ctrl_deps\": 4}",
      /* attrs: the first with a value; a later one of the same name with no
       * value does not hide it, an earlier one without a value is skipped. */
      "{\"attrs\": [{\"name\": \"rf_id\"}, {\"value\": 3, \"name\": "
      "\"rf_id\"}, {\"name\": \"rf_id\", \"value\": 4}, 7, [], {\"name\": 1, "
      "\"value\": 2}, {\"name\": \"op_schema\", \"value\": [1, {\"a\": "
      "[]}]}, {\"name\": \"kernel_backend\", \"value\": \"triton\", \"name\": "
      "\"x\"}]}",
      /* Numbers of every form, and the int64 edges. */
      "{\"id\": 9223372036854775807, \"ts\": -9223372036854775808, "
      "\"inclusive_dur\": 9223372036854775808, \"ctrl_deps\": -0, \"cat\": "
      "0.5e-3, \"parent\": 1E+2, \"x\": [0, -1.25, 3e7, 1.0E-0]}",
      /* Literals and composites where scalars are expected. */
      "{\"id\": true, \"name\": false, \"ctrl_deps\": [1], \"inputs\": "
      "{\"values\": 1, \"types\": {\"a\": null}, \"values\": []}, "
      "\"outputs\": [], \"attrs\": {\"name\": \"rf_id\"}, \"cat\": \"gpu\"}",
      /* Bytes >= 0x20 of any kind, UTF-8 included, and a '/' unescaped. */
      "{\"name\": \"caf\xc3\xa9 \x7f a/b\", \"inputs\": {}}",
      NULL,
  };
  for (size_t i = 0; ok[i]; i++)
    if (!check_str(ok[i])) fail_msg("declined: %s", ok[i]);
  /* 64 levels of arrays inside a member are taken, deeper is declined. */
  char deep[400];
  for (int depth = 60; depth <= 70; depth++) {
    size_t o = (size_t)snprintf(deep, sizeof deep, "{\"x\": ");
    for (int k = 0; k < depth; k++) deep[o++] = '[';
    for (int k = 0; k < depth; k++) deep[o++] = ']';
    deep[o++] = '}';
    deep[o] = '\0';
    assert_int_equal(check_str(deep), depth <= PTS_MAX_DEPTH);
  }
  etsim_conv__pt_value_parser_free(&P);
}

/* Declined: escapes (the tree path decodes them), and every malformed text
 * (the tree path reports it), including the buffer's end inside a value. */
static void test_declines(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  static const char *const valid_but_slow[] = {
      "{\"name\": \"a\\\"b\"}",
      "{\"name\": \"\\u00e9\"}",
      "{\"x\": \"\\ud83d\\ude00\"}",
      "{\"na\\u006de\": \"a\"}",
      "[1]",
      "\"a\"",
      NULL,
  };
  static const char *const malformed[] = {
      "{\"id\": 1,}",
      "{\"id\" 1}",
      "{\"id\": 01}",
      "{\"id\": 1.}",
      "{\"id\": -}",
      "{\"id\": 1e}",
      "{\"id\": .5}",
      "{\"id\": +1}",
      "{\"id\": tru}",
      "{\"id\": nul}",
      "{\"id\": True}",
      "{\"id\": NaN}",
      "{\"id\": [1, 2,]}",
      "{\"id\": [1 2]}",
      "{1: 2}",
      "{\"a\": \"x\ty\"}",
      "{\"a\": \"x\ny\"}",
      "{\"a\": \"x",
      "{\"a\": [",
      "{\"a\": 1",
      "{\"a\": {\"b\": 1]}",
      "{\"a\": [1}",
      "{'a': 1}",
      "{\"a\": 0x10}",
      "{\"a\": \"\\x\"}",
      "{\"a\": \"\\u12\"}",
      "{\"a\": \"\\ud800\"}",
      "{\"a\": 1 /* c */}",
      "{\"a\": Infinity}",
      "",
      "{",
      NULL,
  };
  for (size_t i = 0; valid_but_slow[i]; i++) {
    assert_int_equal(check_str(valid_but_slow[i]), 0);
    ptv_t v;
    size_t pos;
    const char *what;
    size_t n = strlen(valid_but_slow[i]);
    memcpy(tree_buf, valid_but_slow[i], n + 1);
    assert_int_equal(etsim_conv__pt_value_parse(&P, tree_buf, n, &v, &pos, &what), 0);
  }
  for (size_t i = 0; malformed[i]; i++) {
    if (check_str(malformed[i])) fail_msg("took malformed %s", malformed[i]);
    ptv_t v;
    size_t pos;
    const char *what;
    size_t n = strlen(malformed[i]);
    memcpy(tree_buf, malformed[i], n + 1);
    assert_int_equal(etsim_conv__pt_value_parse(&P, tree_buf, n, &v, &pos, &what), ETSIM_EFORMAT);
  }
  /* A NUL inside the text is where the buffer ends: declined. */
  assert_int_equal(check("{\"id\": 1\0}", 10), 0);
  assert_int_equal(check("{\"name\": \"a\0b\"}", 15), 0);
  etsim_conv__pt_value_parser_free(&P);
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Seeded random edits of a real node: whatever the scanner takes, the tree
 * parser takes with the same fields; whatever the tree parser takes
 * without escapes, the scanner takes too (so the fast path is not lost on
 * odd but valid text). */
static void test_mutations(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  static const char alphabet[] = "\"\\{}[],: 09-.eEtrufalsn\n\x01x+";
  size_t base = strlen(REAL_NODE);
  char text[4096];
  long taken = 0, tree_ok = 0;
  for (int trial = 0; trial < 40000; trial++) {
    memcpy(text, REAL_NODE, base);
    size_t len = base;
    int edits = 1 + (int)(next_rand() % 3);
    for (int k = 0; k < edits; k++) {
      size_t at = (size_t)(next_rand() % len);
      char ch = alphabet[next_rand() % (sizeof alphabet - 1)];
      switch (next_rand() % 3) {
        case 0: /* replace */
          text[at] = ch;
          break;
        case 1: /* insert */
          memmove(text + at + 1, text + at, len - at);
          text[at] = ch;
          len++;
          break;
        default: /* delete */
          memmove(text + at, text + at + 1, len - at - 1);
          len--;
          break;
      }
    }
    int took = check(text, len);
    taken += took;
    memcpy(tree_buf, text, len);
    tree_buf[len] = '\0';
    ptv_t v;
    size_t pos;
    const char *what;
    if (etsim_conv__pt_value_parse(&P, tree_buf, len, &v, &pos, &what) == 0 && v.t == PTV_OBJ) {
      tree_ok++;
      if (!memchr(text, '\\', len) && !took)
        fail_msg("valid text without escapes declined: %.*s", (int)len, text);
    }
  }
  print_message("mutations: %ld taken by the scanner, %ld valid objects\n", taken, tree_ok);
  /* Both outcomes really occur (the test is not vacuous). */
  TU_GT(taken, 1000);
  TU_LT(taken, 40000);
  etsim_conv__pt_value_parser_free(&P);
}

/* --------------------------------------------- repr and tensors */

/* etsim_conv__pt_scan_repr of text equals etsim_conv__pt_repr of its tree; 1 when
 * etsim_conv__pt_scan_repr took it. */
static int repr_same(const char *text, size_t len) {
  static ptr_buf_t a, b;
  TU_LT(len, sizeof scan_buf);
  memcpy(scan_buf, text, len);
  scan_buf[len] = '\0';
  etsim_conv__pt_repr_reset(&a);
  int rc = etsim_conv__pt_scan_repr(&a, scan_buf, len);
  if (rc) {
    assert_int_equal(rc, PTJ_SLOW);
    return 0;
  }
  memcpy(tree_buf, text, len);
  tree_buf[len] = '\0';
  ptv_t v;
  size_t pos;
  const char *what;
  if (etsim_conv__pt_value_parse(&P, tree_buf, len, &v, &pos, &what))
    fail_msg("etsim_conv__pt_scan_repr took %.*s, the tree parser says %s", (int)len, text, what);
  etsim_conv__pt_repr_reset(&b);
  assert_int_equal(etsim_conv__pt_repr(&b, &v), 0);
  if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
    fail_msg("repr of %.*s: '%s' vs the tree's '%s'", (int)len, text, a.data, b.data);
  return 1;
}

/* The tree path's rule (pytorch.c io_tensors / walk_tensors), written
 * again here over the parsed values as the reference. */
static size_t ref_n;
static int64_t ref_t[64][5];
static void ref_walk(const ptv_t *v, int depth) {
  if (depth > 8 || !ptv_is_arr(v)) return;
  size_t n = ptv_arr_len(v);
  int tuple = n == 5 || n == 6;
  for (size_t i = 0; tuple && i < 5; i++) tuple = ptv_is_int(ptv_at(v, i));
  if (tuple) {
    TU_LT(ref_n, 64);
    for (int k = 0; k < 5; k++) ref_t[ref_n][k] = ptv_i(ptv_at(v, (size_t)k));
    ref_n++;
    return;
  }
  for (size_t i = 0; i < n; i++) ref_walk(ptv_at(v, i), depth + 1);
}

static size_t got_n;
static int64_t got_t[64][5];
static int got_tensor(void *ctx, const int64_t t[5]) {
  (void)ctx;
  TU_LT(got_n, 64);
  memcpy(got_t[got_n++], t, 5 * sizeof *t);
  return 0;
}

/* etsim_conv__pt_scan_tensors on an {"values": V, "types": T} object's texts equals the
 * reference on its tree; 1 when taken. */
static int tensors_same(const char *io) {
  size_t len = strlen(io);
  memcpy(scan_buf, io, len + 1);
  pts_node_t n;
  size_t used;
  char node[1 << 12];
  snprintf(node, sizeof node, "{\"inputs\": %s}", io);
  memcpy(scan_buf, node, strlen(node) + 1);
  if (etsim_conv__pt_scan_host_node(scan_buf, &n, &used)) return 0;
  got_n = 0;
  int rc = etsim_conv__pt_scan_tensors(n.io_at[0][0], n.io_len[0][0], n.io_at[0][2], n.io_len[0][2],
                                       got_tensor, NULL);
  if (rc) {
    assert_int_equal(rc, PTJ_SLOW);
    return 0;
  }
  memcpy(tree_buf, io, len + 1);
  ptv_t v;
  size_t pos;
  const char *what;
  assert_int_equal(etsim_conv__pt_value_parse(&P, tree_buf, len, &v, &pos, &what), 0);
  const ptv_t *values = etsim_conv__pt_value_get(&v, "values"),
              *types = etsim_conv__pt_value_get(&v, "types");
  ref_n = 0;
  for (size_t i = 0; i < ptv_arr_len(values); i++) {
    const ptv_t *t = ptv_at(types, i);
    if (ptv_is_str(t) && strstr(ptv_str(t), "Tensor")) ref_walk(ptv_at(values, i), 0);
  }
  assert_int_equal(got_n, ref_n);
  assert_memory_equal(got_t, ref_t, ref_n * sizeof ref_t[0]);
  return 1;
}

static void test_repr_tensors(void **state) {
  (void)state;
  etsim_conv__pt_value_parser_init(&P);
  static const char *const texts[] = {
      "[]",
      "{}",
      "[[], {}, [[]]]",
      "[ 1 ,2,\t3 ]",
      "0",
      "-0",
      "7",
      "-12",
      "123456789012345678",
      "-123456789012345678",
      "1234567890123456789",
      "9223372036854775807",
      "-9223372036854775808",
      "9223372036854775808",
      "123456789012345678901234",
      "0.5",
      "1.0",
      "-0.0",
      "1e5",
      "1E-7",
      "2.5e-300",
      "1e400",
      "100.0",
      "0.1",
      "true",
      "false",
      "null",
      "\"plain\"",
      "\"it's\"",
      "\"say \\\"hi\\\"\"",
      "\"\"",
      "\"caf\xc3\xa9\"",
      "\"del \x7f\"",
      "\"both ' and \\\"\"",
      "{\"k\": [1, \"v\"], \"it's\": null, \"\": {}}",
      "[[426, 435, 0, 53120, 4, \"cuda:1\"], 0, 640, 256]",
      "[[53120], [], [], []]",
      "[\"Tensor(float)\", \"Int\", \"Int\"]",
      NULL,
  };
  for (size_t i = 0; texts[i]; i++) {
    int took = repr_same(texts[i], strlen(texts[i]));
    /* Only the escaped strings may go the tree way. */
    if (!took && !strchr(texts[i], '\\')) fail_msg("declined %s", texts[i]);
  }
  /* The tensors rule, on lists the tree path reads. */
  static const char *const io[] = {
      "{\"values\": [[1, 2, 0, 8, 4, \"cuda:0\"], 3, [5, 6, 0, 2, 2]], "
      "\"types\": [\"Tensor(float)\", \"Int\", \"Tensor(half)\"]}",
      /* Lists of tensors, nested; the 9th level and below is not read. */
      "{\"values\": [[[1, 2, 0, 8, 4, \"c\"], [[3, 4, 0, 1, 1]]], "
      "[[[[[[[[[[9, 9, 9, 9, 9]]]]]]]]]], [[[[[[[[8, 8, 8, 8, 8]]]]]]]]], "
      "\"types\": [\"GenericList[Tensor(float)]\", \"Tensor\", "
      "\"Tensor\"]}",
      /* Not tuples: 4 or 7 items, a real, a string among the first five. */
      "{\"values\": [[1, 2, 3, 4], [1, 2, 3, 4, 5, 6, 7], [1, 2.0, 3, 4, 5],"
      " [1, \"2\", 3, 4, 5], [1, 2, 3, 4, 5, 6.5]], \"types\": [\"Tensor\","
      " \"Tensor\", \"Tensor\", \"Tensor\", \"Tensor\"]}",
      /* Types shorter than values, not strings, absent, or not a list. */
      "{\"values\": [[1, 2, 0, 8, 4], [3, 4, 0, 8, 4]], \"types\": "
      "[\"Tensor\"]}",
      "{\"values\": [[1, 2, 0, 8, 4], [3, 4, 0, 8, 4]], \"types\": [1, "
      "[\"Tensor\"]]}",
      "{\"values\": [[1, 2, 0, 8, 4]]}",
      "{\"values\": [[1, 2, 0, 8, 4]], \"types\": \"Tensor\"}",
      "{\"types\": [\"Tensor\"], \"values\": [[-1, -2, 0, -8, 4]], "
      "\"values\": [[5, 5, 5, 5, 5]]}",
      "{\"values\": [], \"types\": []}",
      NULL,
  };
  for (size_t i = 0; io[i]; i++)
    if (!tensors_same(io[i])) fail_msg("declined %s", io[i]);
  assert_true(tensors_same(io[0]));
  assert_int_equal(got_n, 2); /* the first and the third input */
  assert_int_equal(got_t[1][0], 5);
  assert_true(tensors_same(io[1]));
  assert_int_equal(got_n, 3); /* 1, 3 and the 8 at depth 8; not the 9 */
  assert_int_equal(got_t[2][0], 8);
  /* Seeded mutations of a real IO block: whatever etsim_conv__pt_scan_repr takes prints
   * as the tree path prints it. */
  static const char alphabet[] = "\"'\\{}[],: 09-.eEtrufalsn\x7f+";
  const char *base =
      "{\"values\": [[426, 435, 0, 53120, 4, \"cuda:1\"], "
      "[-1], 0.5, true, null, \"it's\"], \"shapes\": "
      "[[53120], [[]], [], [], [], []], \"types\": "
      "[\"Tensor(float)\", \"GenericList[Int]\", \"Double\", "
      "\"Bool\", \"None\", \"String\"]}";
  size_t blen = strlen(base);
  char text[1024];
  long taken = 0;
  for (int trial = 0; trial < 20000; trial++) {
    memcpy(text, base, blen);
    size_t len = blen;
    size_t at = (size_t)(next_rand() % len);
    char ch = alphabet[next_rand() % (sizeof alphabet - 1)];
    switch (next_rand() % 3) {
      case 0:
        text[at] = ch;
        break;
      case 1:
        memmove(text + at + 1, text + at, len - at);
        text[at] = ch;
        len++;
        break;
      default:
        memmove(text + at, text + at + 1, len - at - 1);
        len--;
        break;
    }
    taken += repr_same(text, len);
  }
  print_message("repr mutations: %ld taken\n", taken);
  TU_GT(taken, 1000);
  TU_LT(taken, 20000);
  etsim_conv__pt_value_parser_free(&P);
}

/* ------------------------------------------------------- the stream */

typedef struct {
  uint64_t n, fast, last_line;
  int decline_odd;
} seen_t;

/* A fast path for {"i": N[, "big": "..."]} elements: finds the closing
 * brace (declining when the element is not all in the buffer). */
static int fast_elem(void *u, const char *s, size_t avail, uint64_t index, uint64_t offset,
                     size_t *used, etsim_error_t *err) {
  (void)err;
  (void)offset;
  seen_t *st = u;
  const char *e = memchr(s, '}', avail);
  if (!e || (st->decline_odd && index % 2)) return PTJ_SLOW;
  assert_int_equal(strtoll(s + 6, NULL, 10), (int64_t)index);
  assert_int_equal(st->n, index);
  *used = (size_t)(e + 1 - s);
  st->n++;
  st->fast++;
  return 0;
}

/* The real scanner as the fast path (it declines the malformed one). */
static int fast_scan(void *u, const char *s, size_t avail, uint64_t index, uint64_t offset,
                     size_t *used, etsim_error_t *err) {
  (void)avail;
  (void)offset;
  (void)err;
  seen_t *st = u;
  pts_node_t n;
  if (etsim_conv__pt_scan_host_node(s, &n, used)) return PTJ_SLOW;
  assert_int_equal(st->n, index);
  st->n++;
  st->fast++;
  return 0;
}

static int slow_elem(void *u, const ptv_t *v, uint64_t index, const ptj_loc_t *loc,
                     etsim_error_t *err) {
  (void)err;
  seen_t *st = u;
  assert_int_equal(ptv_i(etsim_conv__pt_value_get(v, "i")), (int64_t)index);
  assert_int_equal(st->n, index);
  st->n++;
  st->last_line = loc->line;
  return 0;
}

static void test_stream_handoff(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/handoff.json", tmp);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fprintf(fp, "{\"nodes\": [\n");
  for (int i = 0; i < 3000; i++) {
    fprintf(fp, "%s{\"i\": %d", i ? ",\n" : "", i);
    if (i == 1500) { /* longer than the whole first buffer */
      fputs(", \"big\": \"", fp);
      for (int k = 0; k < 700000; k++) fputc('a' + k % 26, fp);
      fputc('"', fp);
    }
    fputc('}', fp);
  }
  fprintf(fp, "\n]}\n");
  fclose(fp);
  for (int mode = 0; mode < 2; mode++) {
    seen_t s = {0};
    s.decline_odd = mode;
    etsim_error_t err = {0};
    int rc = etsim_conv__pt_json_stream_ex(path, "nodes", NULL, slow_elem, fast_elem, &s, NULL,
                                           NULL, NULL, &err);
    TU_OK(rc, err);
    assert_int_equal(s.n, 3000);
    /* The big one goes the slow way; so do the odd ones in mode 1.
     * Element i is on line i + 2. */
    assert_int_equal(s.fast, mode ? 1500 - 1 : 3000 - 1);
    assert_int_equal(s.last_line, mode ? 3001 : 1502);
  }
  /* An error after thousands of fast elements keeps its line:column. */
  fp = fopen(path, "w");
  fprintf(fp, "{\"nodes\": [\n");
  for (int i = 0; i < 3000; i++)
    fprintf(fp, "%s{\"i\": %d%s}", i ? ",\n" : "", i, i == 2501 ? ", \"x\": tru" : "");
  fprintf(fp, "]}");
  fclose(fp);
  seen_t s = {0};
  etsim_error_t err = {0};
  int rc = etsim_conv__pt_json_stream_ex(path, "nodes", NULL, slow_elem, fast_scan, &s, NULL, NULL,
                                         NULL, &err);
  assert_int_equal(rc, ETSIM_EFORMAT);
  assert_int_equal(s.fast, 2501); /* all before it went the fast way */
  char want[4300];
  snprintf(want, sizeof want, "%s:2503:18: malformed JSON: invalid literal", path);
  assert_string_equal(err.msg, want);
}

/* ------------------------------------------------ whole conversions */

/* Convert with the fast path on and off: the same summary and bytes. */
static void same_both_ways(const char *name, const char *in, const char *kineto) {
  char out[2][4200];
  etsim_convpt_summary_t s[2];
  for (int k = 0; k < 2; k++) {
    snprintf(out[k], sizeof out[k], "%s/%s_%d.et", tmp, name, k);
    etsim_convpt_opts_t o = {0};
    o.rank = -1;
    o.kineto_path = kineto;
    o.groups_path = "";
    etsim_error_t err = {0};
    etsim_conv__pt_no_fast = k;
    int rc = etsim_convpt_convert(in, out[k], &o, &s[k], &err);
    etsim_conv__pt_no_fast = 0;
    if (rc) print_error("%s\n", name);
    TU_OK(rc, err);
  }
  assert_int_equal(s[0].host_nodes, s[1].host_nodes);
  assert_int_equal(s[0].nodes_written, s[1].nodes_written);
  TU_GT(s[0].nodes_written, 0);
  assert_memory_equal(s[0].by_type, s[1].by_type, sizeof s[0].by_type);
  assert_int_equal(s[0].data_edges, s[1].data_edges);
  size_t la = 0, lb = 0;
  unsigned char *a = tu_read(out[0], &la), *b = tu_read(out[1], &lb);
  assert_non_null(a);
  assert_non_null(b);
  if (la != lb || memcmp(a, b, la) != 0)
    fail_msg("%s: %zu vs %zu bytes, or the bytes differ", name, la, lb);
  free(a);
  free(b);
}

static void test_same_output(void **state) {
  (void)state;
  /* Odd but valid nodes: each must convert as the tree path converts it. */
  char in[4200];
  snprintf(in, sizeof in, "%s/odd.json", tmp);
  FILE *fp = fopen(in, "w");
  assert_non_null(fp);
  fputs(
      "{\"schema\": \"1.1.0-chakra.0.0.4\", \"pid\": 3, \"nodes\": [\n"
      "{\"id\": 1, \"name\": \"[pytorch|profiler|execution_trace|process]\","
      " \"ctrl_deps\": null},\n"
      /* Callees before their caller (deferred, read back in pass 2). */
      "{\"name\": \"aten::add\", \"id\": 5, \"ctrl_deps\": 4, \"attrs\": "
      "[{\"value\": \"aten::add(Tensor a) -> Tensor\", \"name\": "
      "\"op_schema\"}, {\"name\": \"rf_id\", \"value\": 11.0}, {\"name\": "
      "\"tid\", \"value\": 2}], \"inputs\": {\"types\": [\"Tensor(float)\"],"
      " \"values\": [[7, 8, 0, 4, 4, \"cuda:0\"]], \"shapes\": [[4]]}},\n"
      "{\"id\": 6, \"name\": \"aten::mul \\u00e9\", \"ctrl_deps\": 4, "
      "\"attrs\": [{\"name\": \"op_schema\", \"value\": \"aten::mul(\\\"x\\\")"
      "\"}, {\"name\": \"rf_id\", \"value\": 12}]},\n"
      "{\"id\": 11, \"name\": \"aten::mul\", \"ctrl_deps\": 4, "
      "\"inputs\": {\"values\": [[7, 8, 0, 4, 4, \"cuda:0\"], 0.5, -0, "
      "12345678901234567890, 1e400, \"it's\", \"x\x7fy\", [[9, 9, 0, 2, 8], "
      "[10, 9, 2, 2, 8]], {\"a\": [true, false, null]}], \"shapes\": [[4], "
      "[], [], [], [], [], [], [[2], [2]], []], \"types\": "
      "[\"Tensor(float)\", \"Double\", \"Int\", \"Int\", \"Double\", "
      "\"String\", \"String\", \"GenericList[Tensor(float)]\", "
      "\"Dict\"]}, \"outputs\": {\"values\": [[9, 9, 0, 2, 8]], "
      "\"types\": [\"Tensor(float)\"]}, \"attrs\": [{\"name\": "
      "\"op_schema\", \"value\": \"aten::mul(Tensor a) -> Tensor\"}, "
      "{\"name\": \"tid\", \"value\": 2}, {\"name\": \"seq_id\", "
      "\"value\": 5.5}, {\"name\": \"fw_parent\", \"value\": [1]}, "
      "{\"name\": \"scope\", \"value\": true}], \"inter_thread_dep\": 5, "
      "\"ts\": 1.25, \"inclusive_dur\": 0.0005},\n"
      "{\"id\": 12, \"name\": \"aten::add_\", \"ctrl_deps\": 4, "
      "\"inputs\": {\"values\": [[9, 9, 0, 2, 8]], \"types\": "
      "[\"Tensor(float)\"]}, \"attrs\": [{\"name\": \"op_schema\", "
      "\"value\": \"aten::add_(Tensor a) -> Tensor\"}, {\"name\": "
      "\"tid\", \"value\": 1}]},\n"
      "{\"id\": 4, \"name\": \"## forward ##\", \"ctrl_deps\": 1, \"ts\": 10,"
      " \"inclusive_dur\": 5.5, \"attrs\": [{\"name\": \"op_schema\", "
      "\"value\": \"\"}, {\"name\": \"rf_id\", \"value\": 3}]},\n"
      /* Caller known: converted at once, from the tree. */
      "{\"id\": 7, \"name\": \"aten::relu\", \"ctrl_deps\": 1, \"outputs\": "
      "7, \"attrs\": [{\"name\": \"op_schema\", \"value\": \"aten::relu()\"},"
      " {\"name\": \"op_schema\", \"value\": \"\"}, {\"name\": \"rf_id\"}, "
      "{\"name\": \"rf_id\", \"value\": 13}], \"ts\": 20, "
      "\"inclusive_dur\": 2, \"x\": ",
      fp);
  for (int k = 0; k < 70; k++) /* deeper than the scanner goes */
    fputc('[', fp);
  for (int k = 0; k < 70; k++) fputc(']', fp);
  fputs(
      "}\n,\n"
      /* Triton, no schema; a c10d wrapper; a nested op under it. */
      "{\"id\": 9, \"name\": \"triton_k\", \"ctrl_deps\": 8, \"attrs\": "
      "[{\"name\": \"kernel_backend\", \"value\": \"triton\"}]},\n"
      "{\"id\": 10, \"name\": \"aten::view\", \"ctrl_deps\": 9, \"attrs\": "
      "[{\"name\": \"op_schema\", \"value\": \"aten::view()\"}]},\n"
      "{\"id\": 8, \"name\": \"c10d::allreduce_\", \"ctrl_deps\": 1, "
      "\"attrs\": [{\"name\": \"op_schema\", \"value\": \"c10d::x()\"}]}\n"
      "], \"finish_ts\": 99}\n",
      fp);
  fclose(fp);
  same_both_ways("odd", in, NULL);
  TU_NEED_SHARED(resnet, "traces/param/resnet_2gpu_et.json.gz");
  same_both_ways("resnet", resnet, NULL);
  /* Plain, so that pass 2 reads the 3,690 deferred nodes back by offset
   * (the fast path's second half). */
  char cmd0[8600];
  snprintf(cmd0, sizeof cmd0, "gzip -dc '%s' > '%s/resnet.json'", resnet, tmp);
  assert_int_equal(system(cmd0), 0);
  snprintf(in, sizeof in, "%s/resnet.json", tmp);
  same_both_ways("resnet_plain", in, NULL);
  free(resnet);
  TU_NEED_SHARED(linear, "traces/param/linear_et.json.gz");
  same_both_ways("linear", linear, NULL);
  free(linear);
  TU_NEED_SHARED(pt2, "traces/param/pt2_et.json");
  same_both_ways("pt2", pt2, NULL);
  free(pt2);
  TU_NEED_SHARED(tgz, "traces/chakra/1.0.2-chakra.0.0.4.tgz");
  char cmd[8600];
  snprintf(cmd, sizeof cmd, "tar xzf '%s' -C '%s' 2>/dev/null", tgz, tmp);
  assert_int_equal(system(cmd), 0);
  snprintf(in, sizeof in, "%s/1.0.2-chakra.0.0.4.json", tmp);
  same_both_ways("chakra102", in, NULL);
  free(tgz);
  TU_NEED_SHARED(host, "traces/hta/benchmark_simple_add_et.json.gz");
  TU_NEED_SHARED(dev, "traces/hta/benchmark_simple_add_trace.json.gz");
  same_both_ways("hta", host, dev);
  free(host);
  free(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields),         cmocka_unit_test(test_declines),
      cmocka_unit_test(test_mutations),      cmocka_unit_test(test_repr_tensors),
      cmocka_unit_test(test_stream_handoff), cmocka_unit_test(test_same_output),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}

/*
 * test_json.c — the JSON form: a node with every one of the 30 attribute
 * kinds (negative int32, NaN and -0.0 doubles, an empty list, an empty
 * string, bytes with zeros) is formatted with the exact protobuf-JSON
 * spellings, read back field for field, and goes .et -> JSON -> .et byte
 * for byte.
 */
#include "test_util.h"

#include "etsim/et.h"
#include "etsim/etjson.h"

#include <math.h>

static char *tmp;

static int setup(void **state) {
  (void)state;
  tmp = tu_tmpdir();
  return tmp ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  tu_rmdir(tmp);
  return 0;
}

static const double dl[] = {1.5, -0.0, 1e300};
static const float fl[] = {0.1f, -3.0f};
static const int32_t i32l[] = {-1, 2147483647};
static const int64_t i64l[] = {INT64_MIN, 5};
static const uint32_t u32l[] = {4294967295u};
static const uint64_t u64l[] = {UINT64_MAX, 0};
static const int bl[] = {1, 0, 1};
static const char *const sl[] = {"a", "", "q\"\\\n\xc3\xa9"};
static const uint8_t zb[] = {0, 1, 0, 255};
static const etsim_bytes_t yl[] = {{4, zb}, {0, zb}};

static void make_attrs(etsim_attr_t a[30]) {
  memset(a, 0, 30 * sizeof *a);
  for (int k = 0; k < 30; k++) {
    a[k].kind = k + 3;
    a[k].name = etsim_attr_kind_name(k + 3);
    a[k].doc = "";
  }
#define L(idx, arr, cnt) a[idx].v.list.n = (cnt), a[idx].v.list.v = (arr)
  a[0].v.d = NAN; /* double_val */
  L(1, dl, 3);
  a[2].v.f = 0.1f; /* float_val */
  L(3, fl, 2);
  a[4].v.i32 = -7; /* int32_val */
  L(5, i32l, 2);
  a[6].v.i64 = -5; /* int64_val */
  L(7, i64l, 2);
  a[8].v.u32 = 0; /* uint32_val: zero still written */
  L(9, u32l, 1);
  a[10].v.u64 = UINT64_MAX; /* uint64_val */
  L(11, u64l, 0);           /* uint64_list: empty */
  a[12].v.i32 = INT32_MIN;  /* sint32_val */
  L(13, i32l, 2);
  a[14].v.i64 = -9; /* sint64_val */
  L(15, i64l, 2);
  a[16].v.u32 = 17; /* fixed32_val */
  L(17, u32l, 1);
  a[18].v.u64 = 18; /* fixed64_val */
  L(19, u64l, 2);
  a[20].v.i32 = -21; /* sfixed32_val */
  L(21, i32l, 2);
  a[22].v.i64 = -23; /* sfixed64_val */
  L(23, i64l, 2);
  a[24].v.b = 0; /* bool_val false */
  L(25, bl, 3);
  a[26].v.s = ""; /* string_val empty */
  L(27, sl, 3);
  a[28].v.bytes.len = 4; /* bytes_val with zeros */
  a[28].v.bytes.data = zb;
  L(29, yl, 2);
  a[29].doc = "two blobs";
#undef L
}

static void expect(const char *json, const char *piece) {
  if (!strstr(json, piece)) print_error("missing %s in\n%s\n", piece, json);
  TU_CONTAINS(json, piece);
}

static void test_format_all_kinds(void **state) {
  (void)state;
  etsim_attr_t a[30];
  make_attrs(a);
  etsim_ioinfo_t empty = {"", "", ""};
  uint64_t deps[] = {1, 18446744073709551615ull};
  etsim_et_node_t n = {.id = 42,
                       .name = "n",
                       .type = ETSIM_ET_COMP_NODE,
                       .n_data_deps = 2,
                       .data_deps = deps,
                       .inputs = &empty,
                       .n_attrs = 30,
                       .attrs = a};
  etsim_etjson_buf_t b = {0};
  etsim_error_t err = {0};
  assert_int_equal(etsim_etjson_format_node(&b, &n, NULL, &err), 0);
  const char *j = b.data;
  assert_int_equal(j[b.len - 1], '\n');
  expect(j,
         "{\"id\":\"42\",\"name\":\"n\",\"type\":\"COMP_NODE\","
         "\"dataDeps\":[\"1\",\"18446744073709551615\"],\"inputs\":{},\"attr\":[");
  assert_null(strstr(j, "outputs"));
  assert_null(strstr(j, "startTimeMicros"));
  expect(j, "{\"name\":\"double_val\",\"doubleVal\":\"NaN\"}");
  expect(j, "\"doubleList\":{\"values\":[1.5,-0.0,1e+300]}");
  expect(j, "\"floatVal\":0.1}");
  expect(j, "\"floatList\":{\"values\":[0.1,-3.0]}");
  expect(j, "\"int32Val\":-7}");
  expect(j, "\"int32List\":{\"values\":[-1,2147483647]}");
  expect(j, "\"int64Val\":\"-5\"}");
  expect(j, "\"int64List\":{\"values\":[\"-9223372036854775808\",\"5\"]}");
  expect(j, "\"uint32Val\":0}");
  expect(j, "\"uint32List\":{\"values\":[4294967295]}");
  expect(j, "\"uint64Val\":\"18446744073709551615\"}");
  expect(j, "\"uint64List\":{}}");
  expect(j, "\"sint32Val\":-2147483648}");
  expect(j, "\"sint64Val\":\"-9\"}");
  expect(j, "\"fixed32Val\":17}");
  expect(j, "\"fixed64Val\":\"18\"}");
  expect(j, "\"sfixed32Val\":-21}");
  expect(j, "\"sfixed64Val\":\"-23\"}");
  expect(j, "\"boolVal\":false}");
  expect(j, "\"boolList\":{\"values\":[true,false,true]}");
  expect(j, "\"stringVal\":\"\"}");
  expect(j, "\"stringList\":{\"values\":[\"a\",\"\",\"q\\\"\\\\\\n\xc3\xa9\"]}");
  expect(j, "\"bytesVal\":\"AAEA/w==\"}");
  expect(j,
         "{\"name\":\"bytes_list\",\"docString\":\"two blobs\","
         "\"bytesList\":{\"values\":[\"AAEA/w==\",\"\"]}}");
  etsim_etjson_buf_free(&b);

  /* Invalid UTF-8 is refused, naming node and key. */
  etsim_attr_t badattr = {.name = "x", .doc = "", .kind = ETSIM_ATTR_STRING};
  badattr.v.s = "\xff";
  etsim_et_node_t nb = {.id = 3, .name = "", .n_attrs = 1, .attrs = &badattr};
  assert_int_equal(etsim_etjson_format_node(&b, &nb, "f.et", &err), ETSIM_EFORMAT);
  expect(err.msg, "node id 3: key 'attr[0].stringVal'");
  etsim_etjson_buf_free(&b);
}

static void same_attr(const etsim_attr_t *x, const etsim_attr_t *y) {
  assert_string_equal(x->name, y->name);
  assert_string_equal(x->doc, y->doc);
  assert_int_equal(x->kind, y->kind);
}

static void test_roundtrip_all_kinds(void **state) {
  (void)state;
  etsim_attr_t a[30];
  make_attrs(a);
  etsim_ioinfo_t io = {"[1]", "", "int"};
  uint64_t deps[] = {99}; /* dangling: VERBATIM keeps it */
  etsim_et_node_t n = {.id = 1,
                       .name = "all",
                       .type = ETSIM_ET_METADATA_NODE,
                       .n_ctrl_deps = 1,
                       .ctrl_deps = deps,
                       .start_time_micros = 7,
                       .duration_micros = 8,
                       .outputs = &io,
                       .n_attrs = 30,
                       .attrs = a};
  etsim_et_node_t n2 = {.id = 2, .name = "", .inputs = &io};
  etsim_et_meta_t meta = {.version = "1.0.0", .n_attrs = 2, .attrs = a + 26};
  char et[4200], js[4200], et2[4200];
  snprintf(et, sizeof et, "%s/a.et", tmp);
  snprintf(js, sizeof js, "%s/a.json", tmp);
  snprintf(et2, sizeof et2, "%s/b.et", tmp);
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_writer_open(&w, et, ETSIM_ET_WRITE_VERBATIM, &err), 0);
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  assert_int_equal(etsim_et_writer_node(w, &n, &err), 0);
  assert_int_equal(etsim_et_writer_node(w, &n2, &err), 0);
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);

  uint64_t count = 0;
  assert_int_equal(etsim_etjson_jsonize(et, js, 0, &count, &err), 0);
  assert_int_equal(count, 2);
  int rc = etsim_etjson_convert(js, et2, 0, &count, &err);
  TU_OK(rc, err);
  assert_int_equal(count, 2);
  size_t la, lb;
  unsigned char *da = tu_read(et, &la), *db = tu_read(et2, &lb);
  assert_non_null(da);
  assert_non_null(db);
  assert_int_equal(la, lb);
  assert_memory_equal(da, db, la);
  free(da);
  free(db);

  /* Field by field through the JSON reader. */
  etsim_etjson_reader_t *r;
  assert_int_equal(etsim_etjson_reader_open(&r, js, &err), 0);
  assert_string_equal(etsim_etjson_reader_meta(r)->version, "1.0.0");
  assert_int_equal(etsim_etjson_reader_meta(r)->n_attrs, 2);
  const etsim_et_node_t *g;
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), 1);
  assert_int_equal(g->id, 1);
  assert_int_equal(g->type, ETSIM_ET_METADATA_NODE);
  assert_int_equal(g->n_ctrl_deps, 1);
  assert_int_equal(g->ctrl_deps[0], 99);
  assert_null(g->inputs);
  assert_non_null(g->outputs);
  assert_string_equal(g->outputs->types, "int");
  assert_int_equal(g->n_attrs, 30);
  for (int k = 0; k < 30; k++) same_attr(&g->attrs[k], &a[k]);
  assert_true(isnan(g->attrs[0].v.d));
  const double *gd = g->attrs[1].v.list.v;
  TU_EQ(gd[1], 0.0);
  assert_true(signbit(gd[1]));
  TU_EQ(gd[2], 1e300);
  TU_EQ(g->attrs[2].v.f, 0.1f);
  assert_int_equal(g->attrs[4].v.i32, -7);
  assert_int_equal(g->attrs[6].v.i64, -5);
  TU_EQ(g->attrs[10].v.u64, UINT64_MAX);
  assert_int_equal(g->attrs[11].v.list.n, 0);
  assert_int_equal(g->attrs[12].v.i32, INT32_MIN);
  const int64_t *gl = g->attrs[7].v.list.v;
  TU_EQ(gl[0], INT64_MIN);
  assert_string_equal(((const char *const *)g->attrs[27].v.list.v)[2], "q\"\\\n\xc3\xa9");
  assert_int_equal(g->attrs[28].v.bytes.len, 4);
  assert_memory_equal(g->attrs[28].v.bytes.data, zb, 4);
  const etsim_bytes_t *gy = g->attrs[29].v.list.v;
  assert_int_equal(gy[0].len, 4);
  assert_int_equal(gy[1].len, 0);
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), 1);
  assert_int_equal(g->id, 2);
  assert_non_null(g->inputs); /* present even though the node is otherwise bare */
  assert_null(g->outputs);
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), 0);
  etsim_etjson_reader_close(r);
}

/* Reading accepts proto field names, numbers for 64-bit values, padding-free
 * base64 and objects spread over lines. */
static void test_reader_lenient_forms(void **state) {
  (void)state;
  char js[4200];
  snprintf(js, sizeof js, "%s/l.json", tmp);
  const char *text =
      "{\n  \"version\": \"v\"\n}\n"
      "{\"id\": 5, \"type\": 7, \"data_deps\": [\"4\", 3],\n"
      " \"attr\": [{\"name\": \"b\", \"bytes_val\": \"AAE\"},\n"
      "           {\"name\": \"l\", \"int64List\": {\"values\": []}}]}";
  assert_int_equal(tu_write(js, text, strlen(text)), 0);
  etsim_error_t err = {0};
  etsim_etjson_reader_t *r;
  assert_int_equal(etsim_etjson_reader_open(&r, js, &err), 0);
  const etsim_et_node_t *g;
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), 1);
  assert_int_equal(g->id, 5);
  assert_int_equal(g->type, ETSIM_ET_COMM_COLL_NODE);
  assert_int_equal(g->n_data_deps, 2);
  assert_int_equal(g->data_deps[1], 3);
  assert_int_equal(g->attrs[0].kind, ETSIM_ATTR_BYTES);
  assert_int_equal(g->attrs[0].v.bytes.len, 2);
  assert_int_equal(g->attrs[0].v.bytes.data[1], 1);
  assert_int_equal(g->attrs[1].kind, ETSIM_ATTR_INT64_LIST);
  assert_int_equal(g->attrs[1].v.list.n, 0);
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), 0);
  etsim_etjson_reader_close(r);

  /* A wrong type names the line, object, node and key. */
  const char *bad = "{}\n{\"id\":\"9\"}\n\n{\"id\":\"10\",\"durationMicros\":[1]}\n";
  assert_int_equal(tu_write(js, bad, strlen(bad)), 0);
  assert_int_equal(etsim_etjson_reader_open(&r, js, &err), 0);
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), 1);
  assert_int_equal(etsim_etjson_reader_next(r, &g, &err), ETSIM_EFORMAT);
  expect(err.msg, "l.json:4: object 3 (node id 10): key 'durationMicros'");
  etsim_etjson_reader_close(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_format_all_kinds),
      cmocka_unit_test(test_roundtrip_all_kinds),
      cmocka_unit_test(test_reader_lenient_forms),
  };
  return TU_RUN(tests, setup, teardown);
}

/*
 * test_wire.c — the hand-written Node decoder and encoder (src/et/wire.c)
 * against protobuf-c, the reference they replace on the hot path.
 *
 * - Every node of every real trace under ../shared/traces (and chakra.0.et)
 *   is taken by the fast decoder (no fallback) and gives the same view as
 *   protobuf-c; the loaded trace gives the same views too.
 * - Nodes with every attribute kind, extreme values, empty lists and
 *   strings encode to the same bytes as protobuf-c's pack, and decode back
 *   to the same views both ways.
 * - Non-canonical encodings (over-long varints, odd bool payloads, unpacked
 *   repeated deps, repeated fields, unknown fields, 2-byte tags) are either
 *   decoded exactly as protobuf-c does or left to it.
 * - A message cut at every byte offset, and seeded random byte mutations,
 *   never give a fast result that protobuf-c disagrees with; a file cut at
 *   every offset fails to load with a message naming the file and offset.
 */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include "et/et_int.h"
#include "etsim/et.h"

#include <ftw.h>

/* ------------------------------------------------------- view comparison */

static int same_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* Describe the first difference between two views into why; 1 if equal. */
static int same_attr(const etsim_attr_t *a, const etsim_attr_t *b, char *why, size_t n) {
  if (!same_str(a->name, b->name) || !same_str(a->doc, b->doc) || a->kind != b->kind) {
    snprintf(why, n, "attr '%s'/'%s' kind %d/%d", a->name, b->name, a->kind, b->kind);
    return 0;
  }
  switch (a->kind) {
    case ETSIM_ATTR_NONE:
      return 1;
    case ETSIM_ATTR_DOUBLE:
    case ETSIM_ATTR_FIXED64:
    case ETSIM_ATTR_SFIXED64:
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_SINT64:
      if (memcmp(&a->v, &b->v, 8) == 0) return 1;
      break;
    case ETSIM_ATTR_FLOAT:
    case ETSIM_ATTR_FIXED32:
    case ETSIM_ATTR_SFIXED32:
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_SINT32:
      if (memcmp(&a->v, &b->v, 4) == 0) return 1;
      break;
    case ETSIM_ATTR_BOOL:
      if (a->v.b == b->v.b) return 1;
      break;
    case ETSIM_ATTR_STRING:
      if (same_str(a->v.s, b->v.s)) return 1;
      break;
    case ETSIM_ATTR_BYTES:
      if (a->v.bytes.len == b->v.bytes.len &&
          (!a->v.bytes.len || memcmp(a->v.bytes.data, b->v.bytes.data, a->v.bytes.len) == 0))
        return 1;
      break;
    case ETSIM_ATTR_STRING_LIST:
      if (a->v.list.n != b->v.list.n) break;
      for (size_t i = 0; i < a->v.list.n; i++)
        if (!same_str(((const char *const *)a->v.list.v)[i], ((const char *const *)b->v.list.v)[i]))
          goto diff;
      return 1;
    case ETSIM_ATTR_BYTES_LIST:
      if (a->v.list.n != b->v.list.n) break;
      for (size_t i = 0; i < a->v.list.n; i++) {
        const etsim_bytes_t *x = &((const etsim_bytes_t *)a->v.list.v)[i];
        const etsim_bytes_t *y = &((const etsim_bytes_t *)b->v.list.v)[i];
        if (x->len != y->len || (x->len && memcmp(x->data, y->data, x->len))) goto diff;
      }
      return 1;
    default: {
      size_t es = etsim_et__list_elem_size(a->kind);
      if (a->v.list.n == b->v.list.n &&
          (!a->v.list.n || memcmp(a->v.list.v, b->v.list.v, a->v.list.n * es) == 0))
        return 1;
      break;
    }
  }
diff:
  snprintf(why, n, "attr '%s' (%s) values differ", a->name, etsim_attr_kind_name(a->kind));
  return 0;
}

static int same_io(const etsim_ioinfo_t *a, const etsim_ioinfo_t *b) {
  if (!a || !b) return a == b;
  return same_str(a->values, b->values) && same_str(a->shapes, b->shapes) &&
         same_str(a->types, b->types);
}

static int same_node(const etsim_et_node_t *a, const etsim_et_node_t *b, char *why, size_t n) {
  if (a->id != b->id || a->type != b->type || a->start_time_micros != b->start_time_micros ||
      a->duration_micros != b->duration_micros || !same_str(a->name, b->name)) {
    snprintf(why, n, "id %llu/%llu, type %d/%d, name '%s'/'%s' or times", (unsigned long long)a->id,
             (unsigned long long)b->id, a->type, b->type, a->name, b->name);
    return 0;
  }
  if (a->n_data_deps != b->n_data_deps || a->n_ctrl_deps != b->n_ctrl_deps ||
      (a->n_data_deps && memcmp(a->data_deps, b->data_deps, a->n_data_deps * 8)) ||
      (a->n_ctrl_deps && memcmp(a->ctrl_deps, b->ctrl_deps, a->n_ctrl_deps * 8))) {
    snprintf(why, n, "deps differ (%zu/%zu data, %zu/%zu ctrl)", a->n_data_deps, b->n_data_deps,
             a->n_ctrl_deps, b->n_ctrl_deps);
    return 0;
  }
  if (!same_io(a->inputs, b->inputs) || !same_io(a->outputs, b->outputs)) {
    snprintf(why, n, "inputs/outputs differ");
    return 0;
  }
  if (a->n_attrs != b->n_attrs) {
    snprintf(why, n, "%zu/%zu attributes", a->n_attrs, b->n_attrs);
    return 0;
  }
  for (size_t k = 0; k < a->n_attrs; k++)
    if (!same_attr(&a->attrs[k], &b->attrs[k], why, n)) return 0;
  return 1;
}

/* ------------------------------------------- both decoders on one message */

static etsim_et_reader_t *g_reader; /* protobuf-c path (reader on a stub) */
static etsim_arena_t g_arena;
static et_wnode_t g_wn;
static etsim_attr_t *g_attrs;
static size_t g_attrs_cap;

static int open_stub_reader(void **state) {
  (void)state;
  if (tu_setup(state)) return -1;
  char p[4200];
  snprintf(p, sizeof p, "%s/stub.et", tmp);
  const unsigned char meta[] = {0x00}; /* an empty GlobalMetadata */
  if (tu_write(p, meta, sizeof meta)) return -1;
  etsim_error_t err = {0};
  if (etsim_et_reader_open(&g_reader, p, 0, &err)) return -1;
  etsim_arena_init(&g_arena, 16 * 1024);
  return 0;
}

static int close_stub_reader(void **state) {
  etsim_et_reader_close(g_reader);
  etsim_arena_free(&g_arena);
  free(g_wn.attrs);
  free(g_attrs);
  return tu_teardown(state);
}

/* Fast decode: 0 and *out, ET_WIRE_BAIL, or an error. */
static int fast_view(const uint8_t *p, size_t n, const etsim_et_node_t **out) {
  static etsim_et_node_t v;
  static etsim_ioinfo_t io[2];
  etsim_arena_reset(&g_arena);
  int rc = etsim_et__wire_node(p, n, &g_wn);
  if (rc == 0) rc = etsim_et__wire_view(&g_wn, &g_arena, &v, io, &g_attrs, &g_attrs_cap);
  *out = &v;
  return rc;
}

/* Slow decode with protobuf-c: 0 and *out, or an error code. */
static int slow_view(const uint8_t *p, size_t n, const etsim_et_node_t **out, etsim_error_t *err) {
  return etsim_et__reader_slow(g_reader, p, (uint32_t)n, 0, out, err);
}

/* Where the two paths must agree: if the fast path takes the message,
 * protobuf-c must decode it to the same view.  Returns 1 when fast took it. */
static int check_agree(const uint8_t *p, size_t n, const char *what) {
  const etsim_et_node_t *f;
  int rc = fast_view(p, n, &f);
  if (rc == ET_WIRE_BAIL) return 0;
  assert_int_equal(rc, 0);
  /* Copy the fast view's scalars: the slow decode reuses nothing of it, but
   * keep the comparison independent of either buffer. */
  const etsim_et_node_t *s;
  etsim_error_t err = {0};
  int src = slow_view(p, n, &s, &err);
  if (src != 0) print_error("%s: fast path took a message protobuf-c rejects: %s\n", what, err.msg);
  assert_int_equal(src, 0);
  char why[256];
  if (!same_node(f, s, why, sizeof why))
    print_error("%s: fast and protobuf-c views differ: %s\n", what, why);
  assert_true(same_node(f, s, why, sizeof why));
  return 1;
}

/* Pack with protobuf-c; the bytes must equal the hand encoder's. */
static size_t pack_both(const etsim_et_node_t *n, uint8_t **out) {
  static uint8_t *pbuf;
  static size_t pcap;
  etsim_arena_t scratch;
  etsim_arena_init(&scratch, 4096);
  long plen = etsim_et__pbc_pack_node(n, &scratch, &pbuf, &pcap);
  etsim_arena_free(&scratch);
  TU_GE(plen, 0);
  size_t len = etsim_et__wire_node_size(n);
  if (len != (size_t)plen) print_error("size %zu, protobuf-c %ld\n", len, plen);
  assert_int_equal(len, (size_t)plen);
  uint8_t *mine = malloc(len + 1);
  assert_int_equal(etsim_et__wire_encode_node(n, mine), len);
  size_t i = 0;
  while (i < len && mine[i] == pbuf[i]) i++;
  if (i < len) print_error("encodings differ at byte %zu of %zu\n", i, len);
  assert_int_equal(i, len);
  *out = mine;
  return len;
}

/* ------------------------------------------------------------ real traces */

static size_t n_files, n_nodes_fast;

static void compare_file(const char *path) {
  etsim_error_t err = {0};
  etsim_et_reader_t *r;
  assert_int_equal(etsim_et_reader_open(&r, path, 0, &err), 0);
  etsim_et_trace_t *t;
  if (etsim_et_trace_load(&t, path, 0, &err)) print_error("%s\n", err.msg);
  assert_non_null(t);
  etsim_et_viewbuf_t vb;
  memset(&vb, 0, sizeof vb);
  const uint8_t *data;
  uint32_t len;
  uint64_t off;
  size_t i = 0;
  int rc;
  while ((rc = etsim_et__reader_raw(r, &data, &len, &off, &err)) == 1) {
    char what[4300];
    snprintf(what, sizeof what, "%s node %zu", path, i);
    /* Real traces are canonical: the fast path must take every node. */
    if (!check_agree(data, len, what))
      print_error("%s: fast path left the node to protobuf-c\n", what);
    assert_int_equal(etsim_et__wire_node(data, len, &g_wn), 0);
    /* And the loaded trace (fast loader) holds the same node. */
    const etsim_et_node_t *s, *tv;
    assert_int_equal(slow_view(data, len, &s, &err), 0);
    TU_LT(i, t->n_nodes);
    assert_int_equal(etsim_et_trace_view(t, i, &vb, &tv), 0);
    char why[256];
    if (!same_node(tv, s, why, sizeof why))
      print_error("%s: loaded trace differs from protobuf-c: %s\n", what, why);
    assert_true(same_node(tv, s, why, sizeof why));
    i++;
    n_nodes_fast++;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(i, t->n_nodes);
  etsim_et_viewbuf_free(&vb);
  etsim_et_trace_free(t);
  etsim_et_reader_close(r);
  n_files++;
}

static int visit(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  size_t n = strlen(p);
  if (flag == FTW_F && n > 3 && strcmp(p + n - 3, ".et") == 0) compare_file(p);
  return 0;
}

static void test_real_traces(void **state) {
  (void)state;
  TU_NEED_SHARED(root, "traces");
  n_files = n_nodes_fast = 0;
  nftw(root, visit, 16, FTW_PHYS);
  char *c0 = tu_chakra0(tmp);
  assert_non_null(c0);
  compare_file(c0);
  free(c0);
  free(root);
  assert_int_equal(n_files, 25);
  TU_GT(n_nodes_fast, 3664);
}

/* ------------------------------------------------- every attribute kind */

/* A node with every kind, edge values, empty lists and strings. */
static etsim_attr_t kinds[40];
static size_t n_kinds;

static const double dl[] = {0.0, -1.5, 1e300, -0.0};
static const float fl[] = {3.25f, -0.0f};
static const int32_t i32l[] = {0, -1, INT32_MIN, INT32_MAX, 300};
static const int64_t i64l[] = {0, -1, INT64_MIN, INT64_MAX};
static const uint32_t u32l[] = {0, 1, 127, 128, UINT32_MAX};
static const uint64_t u64l[] = {0, 1, (1ull << 63), UINT64_MAX, 16384};
static const int bl[] = {1, 0, 1, 1};
static const char *const sl[] = {"a", "", "pg:0,1,2,3", "tail"};
static const uint8_t braw[] = {0, 1, 2, 0xff};
static const etsim_bytes_t bytl[] = {{4, braw}, {0, NULL}, {1, braw + 3}};

static void add_kind(const char *name, int kind) {
  etsim_attr_t *a = &kinds[n_kinds++];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->doc = "";
  a->kind = kind;
}

static void build_kinds(int empty_lists) {
  n_kinds = 0;
  add_kind("none", ETSIM_ATTR_NONE);
  add_kind("d", ETSIM_ATTR_DOUBLE);
  kinds[n_kinds - 1].v.d = -2.5e-300;
  add_kind("f", ETSIM_ATTR_FLOAT);
  kinds[n_kinds - 1].v.f = 1.5f;
  add_kind("i32", ETSIM_ATTR_INT32);
  kinds[n_kinds - 1].v.i32 = -7;
  add_kind("i64", ETSIM_ATTR_INT64);
  kinds[n_kinds - 1].v.i64 = INT64_MIN;
  add_kind("u32", ETSIM_ATTR_UINT32);
  kinds[n_kinds - 1].v.u32 = UINT32_MAX;
  add_kind("u64", ETSIM_ATTR_UINT64);
  kinds[n_kinds - 1].v.u64 = UINT64_MAX;
  add_kind("s32", ETSIM_ATTR_SINT32);
  kinds[n_kinds - 1].v.i32 = INT32_MIN;
  add_kind("s64", ETSIM_ATTR_SINT64);
  kinds[n_kinds - 1].v.i64 = -3;
  add_kind("fx32", ETSIM_ATTR_FIXED32);
  kinds[n_kinds - 1].v.u32 = 0xdeadbeef;
  add_kind("fx64", ETSIM_ATTR_FIXED64);
  kinds[n_kinds - 1].v.u64 = 1;
  add_kind("sfx32", ETSIM_ATTR_SFIXED32);
  kinds[n_kinds - 1].v.i32 = -1;
  add_kind("sfx64", ETSIM_ATTR_SFIXED64);
  kinds[n_kinds - 1].v.i64 = INT64_MAX;
  add_kind("comm_type", ETSIM_ATTR_INT64); /* a oneof zero: still written */
  add_kind("is_cpu_op", ETSIM_ATTR_BOOL);  /* false */
  add_kind("b", ETSIM_ATTR_BOOL);
  kinds[n_kinds - 1].v.b = 1;
  add_kind("s", ETSIM_ATTR_STRING);
  kinds[n_kinds - 1].v.s = "hello";
  add_kind("s0", ETSIM_ATTR_STRING);
  kinds[n_kinds - 1].v.s = "";
  add_kind("by", ETSIM_ATTR_BYTES);
  kinds[n_kinds - 1].v.bytes.len = sizeof braw;
  kinds[n_kinds - 1].v.bytes.data = braw;
  add_kind("by0", ETSIM_ATTR_BYTES);
  kinds[n_kinds - 1].doc = "a doc string";
#define L(nm, kind, arr)                                                      \
  add_kind(nm, kind);                                                         \
  kinds[n_kinds - 1].v.list.n = empty_lists ? 0 : sizeof arr / sizeof arr[0]; \
  kinds[n_kinds - 1].v.list.v = arr;
  L("dl", ETSIM_ATTR_DOUBLE_LIST, dl);
  L("fl", ETSIM_ATTR_FLOAT_LIST, fl);
  L("i32l", ETSIM_ATTR_INT32_LIST, i32l);
  L("i64l", ETSIM_ATTR_INT64_LIST, i64l);
  L("u32l", ETSIM_ATTR_UINT32_LIST, u32l);
  L("u64l", ETSIM_ATTR_UINT64_LIST, u64l);
  L("s32l", ETSIM_ATTR_SINT32_LIST, i32l);
  L("s64l", ETSIM_ATTR_SINT64_LIST, i64l);
  L("fx32l", ETSIM_ATTR_FIXED32_LIST, u32l);
  L("fx64l", ETSIM_ATTR_FIXED64_LIST, u64l);
  L("sfx32l", ETSIM_ATTR_SFIXED32_LIST, i32l);
  L("sfx64l", ETSIM_ATTR_SFIXED64_LIST, i64l);
  L("involved_dim", ETSIM_ATTR_BOOL_LIST, bl);
  L("sl", ETSIM_ATTR_STRING_LIST, sl);
  L("bytl", ETSIM_ATTR_BYTES_LIST, bytl);
#undef L
}

static const uint64_t deps_big[] = {0, 1, 127, 128, UINT64_MAX, 1ull << 63, 5};
static const etsim_ioinfo_t io_in = {"[[1, 2]]", "[[2]]", "['Tensor(float)']"};
static const etsim_ioinfo_t io_empty = {"", "", ""};

static void fill_node(etsim_et_node_t *n, int variant) {
  memset(n, 0, sizeof *n);
  n->id = variant & 1 ? UINT64_MAX : 42;
  n->name = variant & 2 ? ""
                        : "aten::mm_with_a_rather_long_name_to_cross_127_"
                          "bytes_when_combined_with_everything_else";
  n->type = variant & 4 ? ETSIM_ET_COMM_COLL_NODE : ETSIM_ET_INVALID_NODE;
  n->start_time_micros = variant & 8 ? 0 : 1234567;
  n->duration_micros = UINT64_MAX - 1;
  n->data_deps = deps_big;
  n->n_data_deps = variant & 16 ? 0 : sizeof deps_big / sizeof deps_big[0];
  n->ctrl_deps = deps_big + 2;
  n->n_ctrl_deps = variant & 32 ? 0 : 3;
  n->inputs = variant & 64 ? NULL : &io_in;
  n->outputs = variant & 128 ? &io_empty : NULL;
  build_kinds(variant & 256);
  n->attrs = kinds;
  n->n_attrs = n_kinds;
}

static void test_every_kind_encodes_and_decodes(void **state) {
  (void)state;
  for (int variant = 0; variant < 512; variant += (variant < 16 ? 1 : 37)) {
    etsim_et_node_t n;
    fill_node(&n, variant);
    uint8_t *bytes;
    size_t len = pack_both(&n, &bytes);
    char what[64];
    snprintf(what, sizeof what, "variant %d", variant);
    assert_true(check_agree(bytes, len, what));
    /* The decoded view is the one encoded. */
    const etsim_et_node_t *f;
    assert_int_equal(fast_view(bytes, len, &f), 0);
    char why[256];
    if (!same_node(f, &n, why, sizeof why)) print_error("%s: round trip differs: %s\n", what, why);
    assert_true(same_node(f, &n, why, sizeof why));
    free(bytes);
  }
}

/* Known bytes: the canonical encoding of comm_type = ALL_REDUCE (48 00) and
 * involved_dim = [true x 4] as DESIGN.md spells them. */
static void test_canonical_bytes(void **state) {
  (void)state;
  etsim_attr_t a[2];
  memset(a, 0, sizeof a);
  static const int dims[4] = {1, 1, 1, 1};
  a[0].name = "comm_type";
  a[0].kind = ETSIM_ATTR_INT64;
  a[1].name = "involved_dim";
  a[1].kind = ETSIM_ATTR_BOOL_LIST;
  a[1].v.list.n = 4;
  a[1].v.list.v = dims;
  etsim_et_node_t n;
  memset(&n, 0, sizeof n);
  n.id = 3;
  n.type = ETSIM_ET_COMM_COLL_NODE;
  n.attrs = a;
  n.n_attrs = 2;
  uint8_t *bytes;
  size_t len = pack_both(&n, &bytes);
  static const uint8_t want[] = {0x08, 0x03, 0x18, 0x07, /* id, type */
                                 0x52, 0x0d, 0x0a, 0x09, 'c',  'o',  'm', 'm',  '_',
                                 't',  'y',  'p',  'e',  0x48, 0x00, /* int64 0 */
                                 0x52, 0x17, 0x0a, 0x0c, 'i',  'n',  'v', 'o',  'l',
                                 'v',  'e',  'd',  '_',  'd',  'i',  'm', 0xe2, 0x01,
                                 0x06, 0x0a, 0x04, 1,    1,    1,    1}; /* bool_list */
  assert_int_equal(len, sizeof want);
  assert_memory_equal(bytes, want, sizeof want);
  free(bytes);
}

/* --------------------------------------------- non-canonical encodings */

typedef struct {
  const char *what;
  const uint8_t *p;
  size_t n;
  int fast; /* 1: the fast path must take it, 0: must leave it */
} odd_t;

static void test_odd_encodings(void **state) {
  (void)state;
  /* id as a 10-byte varint whose last byte carries bits past 64 (protobuf-c
   * keeps the low 64 bits). */
  static const uint8_t v10[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  /* 11-byte varint: invalid. */
  static const uint8_t v11[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80,
                                0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  /* bool attr whose only set bit is in the second byte. */
  static const uint8_t bool_hi[] = {0x52, 0x05, 0xd8, 0x01, 0x80, 0x80, 0x02};
  /* bool attr 0x80 0x00: a non-canonical false. */
  static const uint8_t bool_f[] = {0x52, 0x04, 0xd8, 0x01, 0x80, 0x00};
  /* int32 attr as a 5-byte varint of 0xffffffff: -1. */
  static const uint8_t i32_5[] = {0x52, 0x06, 0x38, 0xff, 0xff, 0xff, 0xff, 0x0f};
  /* uint32 attr from a 10-byte varint: truncated to 32 bits. */
  static const uint8_t u32_10[] = {0x52, 0x0b, 0x58, 0x81, 0x80, 0x80, 0x80,
                                   0x90, 0x80, 0x80, 0x80, 0x80, 0x01};
  /* sint32 from a varint wider than 32 bits. */
  static const uint8_t s32_w[] = {0x52, 0x07, 0x78, 0x83, 0x80, 0x80, 0x80, 0x80, 0x01};
  /* deps in a packed run with a 10-byte element. */
  static const uint8_t dep10[] = {0x2a, 0x0b, 0x05, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  /* field 1 with a non-canonical 2-byte tag (0x88 0x00). */
  static const uint8_t tag2[] = {0x88, 0x00, 0x05};
  /* unpacked repeated deps: valid protobuf, protobuf-c takes it. */
  static const uint8_t unpacked[] = {0x28, 0x05, 0x28, 0x06};
  /* two packed runs of data deps: concatenated by protobuf-c. */
  static const uint8_t two_runs[] = {0x2a, 0x01, 0x05, 0x2a, 0x01, 0x06};
  /* id twice: the last wins in protobuf-c. */
  static const uint8_t id_twice[] = {0x08, 0x01, 0x08, 0x02};
  /* inputs twice: merged by protobuf-c. */
  static const uint8_t io_twice[] = {0x42, 0x03, 0x0a, 0x01, 'a', 0x42, 0x03, 0x12, 0x01, 'b'};
  /* an attribute with two oneof members: the last wins. */
  static const uint8_t two_vals[] = {0x52, 0x04, 0x48, 0x01, 0x48, 0x02};
  /* unknown field 11 (a proposed Node.storage). */
  static const uint8_t unknown[] = {0x08, 0x01, 0x5a, 0x00};
  /* node type 8 (a proposed STORAGE_NODE), type -1. */
  static const uint8_t type8[] = {0x18, 0x08};
  static const uint8_t typeneg[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff, 0x01};
  /* string with an embedded NUL: C strings see "ab". */
  static const uint8_t nul[] = {0x12, 0x04, 'a', 'b', 0x00, 'c'};
  /* a length prefix written in 6 bytes: protobuf-c refuses it. */
  static const uint8_t len6[] = {0x12, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 'x'};
  /* list message with its values unpacked. */
  static const uint8_t list_unpacked[] = {0x52, 0x04, 0x52, 0x02, 0x08, 0x07};
  /* fixed32 list of 5 bytes: invalid. */
  static const uint8_t fx_bad[] = {0x52, 0x0a, 0xa2, 0x01, 0x07, 0x0a, 0x05, 1, 2, 3, 4, 5};
  /* bool with a fixed64 wire type: protobuf-c reads it anyway. */
  static const uint8_t bool_i64[] = {0x52, 0x0a, 0xd9, 0x01, 1, 0, 0, 0, 0, 0, 0, 0};
  /* empty message (all defaults). */
  static const uint8_t empty[] = {0};
  const odd_t cases[] = {
      {"10-byte varint", v10, sizeof v10, 1},
      {"11-byte varint", v11, sizeof v11, 0},
      {"bool high bit", bool_hi, sizeof bool_hi, 1},
      {"bool 0x80 0x00", bool_f, sizeof bool_f, 1},
      {"int32 in 5 bytes", i32_5, sizeof i32_5, 1},
      {"uint32 from 10 bytes", u32_10, sizeof u32_10, 1},
      {"sint32 wide", s32_w, sizeof s32_w, 1},
      {"10-byte dep", dep10, sizeof dep10, 1},
      {"2-byte tag", tag2, sizeof tag2, 1},
      {"unpacked deps", unpacked, sizeof unpacked, 0},
      {"two packed runs", two_runs, sizeof two_runs, 0},
      {"id twice", id_twice, sizeof id_twice, 0},
      {"inputs twice", io_twice, sizeof io_twice, 0},
      {"two oneof values", two_vals, sizeof two_vals, 0},
      {"unknown field", unknown, sizeof unknown, 0},
      {"type 8", type8, sizeof type8, 0},
      {"type -1", typeneg, sizeof typeneg, 0},
      {"embedded NUL", nul, sizeof nul, 1},
      {"6-byte length", len6, sizeof len6, 0},
      {"unpacked list", list_unpacked, sizeof list_unpacked, 0},
      {"fixed32 list of 5 bytes", fx_bad, sizeof fx_bad, 0},
      {"bool as fixed64", bool_i64, sizeof bool_i64, 0},
      {"empty", empty, 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int took = check_agree(cases[i].p, cases[i].n, cases[i].what);
    if (took != cases[i].fast)
      print_error("%s: fast path %s it\n", cases[i].what, took ? "took" : "left");
    assert_int_equal(took, cases[i].fast);
  }
  /* Spot values: what protobuf-c makes of them, so what we must too. */
  const etsim_et_node_t *v;
  assert_int_equal(fast_view(v10, sizeof v10, &v), 0);
  TU_EQ(v->id, UINT64_MAX);
  assert_int_equal(fast_view(bool_hi, sizeof bool_hi, &v), 0);
  assert_int_equal(v->attrs[0].v.b, 1);
  assert_int_equal(fast_view(bool_f, sizeof bool_f, &v), 0);
  assert_int_equal(v->attrs[0].v.b, 0);
  assert_int_equal(fast_view(i32_5, sizeof i32_5, &v), 0);
  assert_int_equal(v->attrs[0].v.i32, -1);
  assert_int_equal(fast_view(u32_10, sizeof u32_10, &v), 0);
  assert_int_equal(v->attrs[0].v.u32, 0x00000001u);
  assert_int_equal(fast_view(nul, sizeof nul, &v), 0);
  assert_string_equal(v->name, "ab");
  /* The strict reader still rejects what it rejected. */
  etsim_error_t err = {0};
  const etsim_et_node_t *s;
  assert_int_equal(slow_view(unknown, sizeof unknown, &s, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "unknown field 11");
  TU_CONTAINS(err.msg, "(id 1)");
  assert_int_equal(slow_view(type8, sizeof type8, &s, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "unknown node type 8");
  assert_int_equal(slow_view(v11, sizeof v11, &s, &err), ETSIM_EFORMAT);
  TU_CONTAINS(err.msg, "does not decode");
}

/* ------------------------------------------ truncation and mutation */

static void test_truncated_every_offset(void **state) {
  (void)state;
  etsim_et_node_t n;
  fill_node(&n, 0);
  uint8_t *bytes;
  size_t len = pack_both(&n, &bytes);
  /* A message cut short must never be decoded differently. */
  for (size_t cut = 0; cut < len; cut++) {
    char what[64];
    snprintf(what, sizeof what, "cut at %zu of %zu", cut, len);
    uint8_t *copy = malloc(cut + 1); /* exact size: ASan sees overreads */
    memcpy(copy, bytes, cut);
    check_agree(copy, cut, what);
    free(copy);
  }
  /* A file cut at every offset: load fails naming the file and an offset;
   * cuts inside the node's message name the node. */
  uint8_t file[2048];
  size_t h = etsim_et__wire_put_varint(file + 1, len);
  file[0] = 0x00; /* empty GlobalMetadata */
  memcpy(file + 1 + h, bytes, len);
  size_t total = 1 + h + len;
  char path[4200];
  snprintf(path, sizeof path, "%s/cut.et", tmp);
  for (size_t cut = 2; cut < total; cut++) {
    assert_int_equal(tu_write(path, file, cut), 0);
    etsim_error_t err = {0};
    etsim_et_trace_t *t = NULL;
    int rc = etsim_et_trace_load(&t, path, 0, &err);
    if (rc != ETSIM_EFORMAT || !strstr(err.msg, path) || !strstr(err.msg, "offset 1:"))
      print_error("cut %zu: rc %d: %s\n", cut, rc, err.msg);
    assert_int_equal(rc, ETSIM_EFORMAT);
    assert_null(t);
    TU_CONTAINS(err.msg, path);
    TU_CONTAINS(err.msg, "offset 1:"); /* the node message */
  }
  /* And the whole file loads to the node written. */
  assert_int_equal(tu_write(path, file, total), 0);
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  assert_int_equal(etsim_et_trace_load(&t, path, 0, &err), 0);
  etsim_et_viewbuf_t vb;
  memset(&vb, 0, sizeof vb);
  const etsim_et_node_t *tv;
  assert_int_equal(etsim_et_trace_view(t, 0, &vb, &tv), 0);
  char why[256];
  if (!same_node(tv, &n, why, sizeof why)) print_error("loaded node differs: %s\n", why);
  assert_true(same_node(tv, &n, why, sizeof why));
  etsim_et_viewbuf_free(&vb);
  etsim_et_trace_free(t);
  free(bytes);
}

static void test_random_mutations(void **state) {
  (void)state;
  etsim_rng_t rng;
  etsim_rng_seed(&rng, 20261202);
  etsim_et_node_t n;
  size_t took = 0, runs = 0;
  for (int variant = 0; variant < 512; variant += 61) {
    fill_node(&n, variant);
    uint8_t *bytes;
    size_t len = pack_both(&n, &bytes);
    uint8_t *m = malloc(len);
    for (int it = 0; it < 400; it++) {
      memcpy(m, bytes, len);
      int flips = 1 + (int)etsim_rng_below(&rng, 4);
      for (int k = 0; k < flips; k++) {
        size_t at = etsim_rng_below(&rng, len);
        switch (etsim_rng_below(&rng, 3)) {
          case 0:
            m[at] ^= (uint8_t)(1u << etsim_rng_below(&rng, 8));
            break;
          case 1:
            m[at] = (uint8_t)etsim_rng_below(&rng, 256);
            break;
          default:
            m[at] = (uint8_t)(m[at] | 0x80);
            break; /* extend a varint */
        }
      }
      size_t cut = etsim_rng_below(&rng, 8) == 0 ? etsim_rng_below(&rng, len) : len;
      char what[64];
      snprintf(what, sizeof what, "variant %d mutation %d", variant, it);
      took += (size_t)check_agree(m, cut, what);
      runs++;
    }
    free(m);
    free(bytes);
  }
  /* Both outcomes are exercised: some mutants still decode fast, some are
   * left to protobuf-c. */
  print_message("%zu of %zu mutants taken by the fast path\n", took, runs);
  TU_GT(took, 0);
  TU_LT(took, runs);
}

/* Every allocation of a load failing in turn: ETSIM_ENOMEM with a message
 * naming the file, nothing leaked (ASan checks), until the load succeeds. */
static void test_out_of_memory_walk(void **state) {
  (void)state;
  etsim_et_node_t n;
  fill_node(&n, 0);
  uint8_t *bytes;
  size_t len = pack_both(&n, &bytes);
  uint8_t file[2048];
  file[0] = 0x00;
  size_t h = etsim_et__wire_put_varint(file + 1, len);
  memcpy(file + 1 + h, bytes, len);
  /* A second node depending on the first and on a forward id, and a third
   * breaking the counting run of ids, so the hash index is built too. */
  static const uint8_t more[] = {0x06, 0x08, 0x2b, 0x2a, 0x02, 0x2a,
                                 0x07,                                /* id 43 <- 42, 7 (forward) */
                                 0x05, 0x08, 0x07, 0x2a, 0x01, 0x2a}; /* id 7 <- 42 */
  size_t total = 1 + h + len;
  memcpy(file + total, more, sizeof more);
  total += sizeof more;
  char path[4200];
  snprintf(path, sizeof path, "%s/oom.et", tmp);
  assert_int_equal(tu_write(path, file, total), 0);
  int done = 0;
  for (long k = 1; k < 400 && !done; k++) {
    etsim_error_t err = {0};
    etsim_et_trace_t *t = NULL;
    etsim_alloc_fail_after(k);
    int rc = etsim_et_trace_load(&t, path, 0, &err);
    etsim_alloc_fail_after(0);
    if (rc == 0) {
      assert_int_equal(t->n_nodes, 3);
      /* Node 42's seven deps name no node; 43 -> 42, 43 -> 7, 7 -> 42. */
      assert_int_equal(t->n_dangling_data, 7);
      assert_int_equal(t->n_data_edges, 10);
      assert_int_equal(t->data_par[t->data_off[1]], 0);
      assert_int_equal(t->data_par[t->data_off[1] + 1], 2);
      assert_int_equal(t->data_par[t->data_off[2]], 0);
      assert_int_equal(t->data_coff[1] - t->data_coff[0], 2);
      etsim_et_trace_free(t);
      done = 1;
    } else {
      /* protobuf-c (GlobalMetadata) cannot tell out-of-memory from bad
       * bytes; it says the message does not decode. */
      if (rc == ETSIM_EFORMAT && strstr(err.msg, "does not decode")) rc = ETSIM_ENOMEM;
      if (rc != ETSIM_ENOMEM || !strstr(err.msg, path))
        print_error("allocation %ld: rc %d: %s\n", k, rc, err.msg);
      assert_int_equal(rc, ETSIM_ENOMEM);
      TU_CONTAINS(err.msg, path);
      assert_null(t);
    }
  }
  assert_true(done);
  free(bytes);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_canonical_bytes),
      cmocka_unit_test(test_every_kind_encodes_and_decodes),
      cmocka_unit_test(test_odd_encodings),
      cmocka_unit_test(test_truncated_every_offset),
      cmocka_unit_test(test_random_mutations),
      cmocka_unit_test(test_out_of_memory_walk),
      cmocka_unit_test(test_real_traces),
  };
  return TU_RUN(tests, open_stub_reader, close_stub_reader);
}

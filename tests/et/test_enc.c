/*
 * test_enc.c — the in-memory encoder (etsim_et_enc_*) writes exactly the
 * bytes of the file writer and, message by message, of protobuf-c's pack,
 * for every attribute kind, negative and large values, empty and non-empty
 * lists, IO info, both dependency kinds and metadata with attributes; and
 * it refuses an empty node or a bad kind, leaving the buffer as it was.
 */
#include "test_util.h"

#include "et/et_int.h"
#include "etsim/et.h"

/* The protobuf-c encoding of one message (meta when n is NULL) equals the
 * length-prefixed message at b[*at], which is then skipped. */
static void same_as_protobuf_c(const etsim_et_buf_t *b, size_t *at, const etsim_et_meta_t *m,
                               const etsim_et_node_t *n) {
  static uint8_t *pbuf;
  static size_t pcap;
  etsim_arena_t scratch;
  etsim_arena_init(&scratch, 4096);
  long plen = n ? etsim_et__pbc_pack_node(n, &scratch, &pbuf, &pcap)
                : etsim_et__pbc_pack_meta(m, &scratch, &pbuf, &pcap);
  etsim_arena_free(&scratch);
  TU_GE(plen, 0);
  uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t byte = b->p[(*at)++];
    len |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) break;
  }
  if (len != (uint64_t)plen)
    print_error("message at %zu: %llu bytes, protobuf-c %ld\n", *at, (unsigned long long)len, plen);
  assert_int_equal(len, (uint64_t)plen);
  assert_memory_equal(b->p + *at, pbuf, (size_t)plen);
  *at += (size_t)plen;
}

static const int32_t i32s[] = {0, -1, 7, INT32_MIN, INT32_MAX};
static const int64_t i64s[] = {0, -1, 300, INT64_MIN, INT64_MAX};
static const uint32_t u32s[] = {0, 1, 128, UINT32_MAX};
static const uint64_t u64s[] = {0, 1, 16384, UINT64_MAX};
static const double ds[] = {0.0, -1.5, 1e300};
static const float fs[] = {0.0f, 3.25f, -2.0f};
static const int bs[] = {1, 0, 1, 1};
static const char *const ss[] = {"", "a", "comm"};
static const etsim_bytes_t bys[] = {{0, NULL}, {3, (const uint8_t *)"x\0y"}};

/* Attribute k of the test node: kind 3 + (k % 30), value from k. */
static void make_attr(etsim_attr_t *a, int kind, int variant) {
  memset(a, 0, sizeof *a);
  a->name = variant ? "attr_name" : "";
  a->doc = variant == 2 ? "some doc" : "";
  a->kind = kind;
  size_t n = variant ? 0 : 1; /* list length: variant 1 gives empty lists */
  switch (kind) {
    case ETSIM_ATTR_DOUBLE:
      a->v.d = ds[variant % 3];
      break;
    case ETSIM_ATTR_FLOAT:
      a->v.f = fs[variant % 3];
      break;
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_SINT32:
    case ETSIM_ATTR_SFIXED32:
      a->v.i32 = i32s[variant + 1];
      break;
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_SINT64:
    case ETSIM_ATTR_SFIXED64:
      a->v.i64 = i64s[variant + 1];
      break;
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_FIXED32:
      a->v.u32 = u32s[variant + 1];
      break;
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_FIXED64:
      a->v.u64 = u64s[variant + 1];
      break;
    case ETSIM_ATTR_BOOL:
      a->v.b = variant != 1;
      break;
    case ETSIM_ATTR_STRING:
      a->v.s = ss[variant];
      break;
    case ETSIM_ATTR_BYTES:
      a->v.bytes = bys[variant % 2];
      break;
    default: {
      const void *v = NULL;
/* a list kind: the whole array, or the empty list */
#define LIST(arr) (v = (arr), n = n ? sizeof(arr) / sizeof *(arr) : 0)
      switch (kind) {
        case ETSIM_ATTR_DOUBLE_LIST:
          LIST(ds);
          break;
        case ETSIM_ATTR_FLOAT_LIST:
          LIST(fs);
          break;
        case ETSIM_ATTR_INT32_LIST:
        case ETSIM_ATTR_SINT32_LIST:
        case ETSIM_ATTR_SFIXED32_LIST:
          LIST(i32s);
          break;
        case ETSIM_ATTR_INT64_LIST:
        case ETSIM_ATTR_SINT64_LIST:
        case ETSIM_ATTR_SFIXED64_LIST:
          LIST(i64s);
          break;
        case ETSIM_ATTR_UINT32_LIST:
        case ETSIM_ATTR_FIXED32_LIST:
          LIST(u32s);
          break;
        case ETSIM_ATTR_UINT64_LIST:
        case ETSIM_ATTR_FIXED64_LIST:
          LIST(u64s);
          break;
        case ETSIM_ATTR_BOOL_LIST:
          LIST(bs);
          break;
        case ETSIM_ATTR_STRING_LIST:
          LIST(ss);
          break;
        case ETSIM_ATTR_BYTES_LIST:
          LIST(bys);
          break;
      }
#undef LIST
      a->v.list.n = n;
      a->v.list.v = v;
    }
  }
}

static void test_same_bytes_as_writer(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/w.et", tmp);
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_writer_open(&w, path, ETSIM_ET_WRITE_VERBATIM, &err), 0);
  etsim_et_buf_t buf = {0};
  etsim_attr_t mattrs[2];
  make_attr(&mattrs[0], ETSIM_ATTR_STRING, 2);
  make_attr(&mattrs[1], ETSIM_ATTR_INT64_LIST, 0);
  etsim_et_meta_t meta = {"0.0.4", 2, mattrs};
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  assert_int_equal(etsim_et_enc_meta(&buf, &meta, &err), 0);
  size_t at = 0;
  same_as_protobuf_c(&buf, &at, &meta, NULL);
  etsim_attr_t attrs[31];
  uint64_t deps[] = {0, 1, 127, 128, UINT64_MAX};
  etsim_ioinfo_t io = {"[1, 2]", "", "['float']"}, io0 = {"", "", ""};
  size_t nodes = 0;
  for (int variant = 0; variant < 3; variant++)
    for (int kind = 0; kind <= ETSIM_ATTR_KIND_MAX; kind++) {
      if (kind == 1 || kind == 2) continue;
      etsim_et_node_t n;
      memset(&n, 0, sizeof n);
      n.id = (uint64_t)(kind * 1000003 + variant) * (variant == 2 ? 1ull << 40 : 1);
      n.name = variant == 1 ? "" : "node";
      n.type = kind % ETSIM_ET_NODE_TYPE_COUNT;
      n.start_time_micros = variant ? 5 : 0;
      n.duration_micros = (uint64_t)kind * 300;
      n.data_deps = deps;
      n.n_data_deps = (size_t)kind % 6;
      n.ctrl_deps = deps + 1;
      n.n_ctrl_deps = (size_t)variant;
      n.inputs = variant == 0 ? &io : variant == 1 ? &io0 : NULL;
      n.outputs = variant == 2 ? &io : NULL;
      /* One attribute of this kind, plus one of every kind on the last. */
      make_attr(&attrs[0], kind, variant);
      n.attrs = attrs;
      n.n_attrs = 1;
      if (kind == ETSIM_ATTR_KIND_MAX) {
        int k = 1;
        for (int j = 3; j <= ETSIM_ATTR_KIND_MAX; j++) make_attr(&attrs[k++], j, variant);
        n.n_attrs = (size_t)k;
      }
      assert_int_equal(etsim_et_writer_node(w, &n, &err), 0);
      assert_int_equal(etsim_et_enc_node(&buf, &n, &err), 0);
      same_as_protobuf_c(&buf, &at, NULL, &n);
      nodes++;
    }
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
  size_t len = 0;
  unsigned char *want = tu_read(path, &len);
  assert_non_null(want);
  if (len != buf.n) print_error("writer %zu bytes, encoder %zu bytes\n", len, buf.n);
  assert_int_equal(len, buf.n);
  size_t i = 0;
  while (i < len && want[i] == buf.p[i]) i++;
  if (i < len) print_error("first difference at byte %zu of %zu\n", i, len);
  assert_int_equal(i, len);
  assert_int_equal(nodes, 93); /* 31 kinds (none + 30) x 3 variants */
  free(want);
  etsim_et_buf_free(&buf);
}

static void test_empty_node_refused(void **state) {
  (void)state;
  etsim_et_buf_t buf = {0};
  etsim_et_node_t n;
  memset(&n, 0, sizeof n);
  n.name = "";
  etsim_error_t err = {0};
  assert_int_equal(etsim_et_enc_node(&buf, &n, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "empty message");
  assert_int_equal(buf.n, 0);
  etsim_attr_t a;
  make_attr(&a, 2, 0); /* kind 2 does not exist */
  a.kind = 2;
  n.attrs = &a;
  n.n_attrs = 1;
  n.id = 9;
  assert_int_equal(etsim_et_enc_node(&buf, &n, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "bad kind");
  assert_int_equal(buf.n, 0);
  etsim_et_meta_t meta = {"v", 1, &a};
  assert_int_equal(etsim_et_enc_meta(&buf, &meta, &err), ETSIM_EINVAL);
  assert_string_equal(err.msg, "metadata attribute '' has bad kind 2");
  assert_int_equal(buf.n, 0);
  etsim_et_buf_free(&buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_bytes_as_writer),
      cmocka_unit_test(test_empty_node_refused),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}

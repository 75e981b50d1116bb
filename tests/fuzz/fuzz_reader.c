/*
 * fuzz_reader.c — libFuzzer target for the Chakra reader: any bytes, plain
 * or gzip, must load or fail with a message, never crash, hang or leak.
 * The input goes through a file because the reader's contract is a path.
 * It is also a differential test of the hand-written wire decoder: a
 * streaming reader on the fast path and one forced onto protobuf-c must
 * yield the same nodes (compared by their canonical encodings) and fail at
 * the same node with the same message.
 */
#include "et/et_int.h"
#include "etsim/et.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint8_t *enc_a, *enc_b;
static size_t cap_a, cap_b;

static size_t encode(const etsim_et_node_t *n, uint8_t **buf, size_t *cap) {
  size_t len = etsim_et__wire_node_size(n);
  if (len + 1 > *cap) {
    free(*buf);
    *cap = 2 * len + 64;
    *buf = malloc(*cap);
    if (!*buf) __builtin_trap();
  }
  if (etsim_et__wire_encode_node(n, *buf) != len) __builtin_trap();
  return len;
}

static void differential(const char *path) {
  etsim_error_t ea = {0}, eb = {0};
  etsim_et_reader_t *a, *b;
  int ra = etsim_et_reader_open(&a, path, 0, &ea);
  int rb = etsim_et_reader_open(&b, path, 0, &eb);
  if (ra != rb) __builtin_trap();
  if (ra) {
    if (strcmp(ea.msg, eb.msg) != 0) __builtin_trap();
    return;
  }
  etsim_et__reader_set_slow(b, 1);
  for (;;) {
    const etsim_et_node_t *na, *nb;
    ra = etsim_et_reader_next(a, &na, &ea);
    rb = etsim_et_reader_next(b, &nb, &eb);
    if (ra != rb) __builtin_trap();
    if (ra < 0 && strcmp(ea.msg, eb.msg) != 0) __builtin_trap();
    if (ra != 1) break;
    size_t la = encode(na, &enc_a, &cap_a), lb = encode(nb, &enc_b, &cap_b);
    if (la != lb || memcmp(enc_a, enc_b, la) != 0) __builtin_trap();
  }
  etsim_et_reader_close(a);
  etsim_et_reader_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *path; /* fz_path's slot 3, used by nothing else here */
  if (!path) path = fz_path(3, "in.et");
  FILE *fp = fopen(path, "wb");
  if (!fp) return 0;
  fwrite(data, 1, size, fp);
  fclose(fp);
  differential(path);
  etsim_error_t err = {0};
  etsim_et_trace_t *t;
  if (etsim_et_trace_load(&t, path, 0, &err) == 0) {
    /* A loaded trace must also write back and reload to the same count. */
    char out[336];
    snprintf(out, sizeof out, "%s.out", path);
    if (etsim_et_trace_write(t, out, 0, &err) == 0) {
      etsim_et_trace_t *t2;
      if (etsim_et_trace_load(&t2, out, 0, &err) != 0 || t2->n_nodes != t->n_nodes)
        __builtin_trap();
      etsim_et_trace_free(t2);
      remove(out);
    }
    etsim_et_trace_free(t);
  } else if (!err.msg[0]) {
    __builtin_trap(); /* every failure must explain itself */
  }
  return 0;
}

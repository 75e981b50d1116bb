/*
 * enc.c — Chakra messages into a byte buffer, for writers that build a
 * rank's whole trace in memory (the generators and the text converter).
 *
 * They write millions of small nodes, so nothing goes through protobuf-c
 * message building: the node view is measured and encoded by wire.c, the
 * same encoder the file writer uses, so a buffer holds exactly the bytes
 * etsim_et_writer_* would write (tests/et/test_enc.c checks it for every
 * attribute kind, tests/et/test_wire.c checks the encoder against
 * protobuf-c).
 */
#include "et_int.h"

#include <string.h>

void etsim_et_buf_free(etsim_et_buf_t *b) {
  etsim_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
}

/* Room for `more` bytes after b->n; grows by half again. */
static int reserve(etsim_et_buf_t *b, size_t more) {
  if (b->n + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more) cap += cap / 2;
  uint8_t *p = etsim_realloc(b->p, cap);
  if (!p) return ETSIM_ENOMEM;
  b->p = p;
  b->cap = cap;
  return 0;
}

int etsim_et_enc_node(etsim_et_buf_t *b, const etsim_et_node_t *n, etsim_error_t *err) {
  for (size_t i = 0; i < n->n_attrs; i++)
    if (!etsim_et__wire_attr_ok(&n->attrs[i]))
      return etsim_error_set(err, ETSIM_EINVAL, "node id %llu: attribute '%s' has bad kind %d",
                             (unsigned long long)n->id, n->attrs[i].name, n->attrs[i].kind);
  size_t len = etsim_et__wire_node_size(n);
  if (len == 0)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "node id 0 would be an empty message, which "
                           "Chakra's Python readers take for end of file");
  if (len > UINT32_MAX)
    return etsim_error_set(err, ETSIM_ERANGE, "node id %llu: too large", (unsigned long long)n->id);
  if (reserve(b, len + 10)) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  size_t h = etsim_et__wire_put_varint(b->p + b->n, len);
  size_t put = etsim_et__wire_encode_node(n, b->p + b->n + h);
  ETSIM_ASSERT(put == len); /* the size pass and the encoding agree */
  b->n += h + put;
  return 0;
}

int etsim_et_enc_meta(etsim_et_buf_t *b, const etsim_et_meta_t *m, etsim_error_t *err) {
  for (size_t i = 0; m && i < m->n_attrs; i++)
    if (!etsim_et__wire_attr_ok(&m->attrs[i]))
      return etsim_error_set(err, ETSIM_EINVAL, "metadata attribute '%s' has bad kind %d",
                             m->attrs[i].name, m->attrs[i].kind);
  size_t len = etsim_et__wire_meta_size(m);
  if (len > UINT32_MAX) return etsim_error_set(err, ETSIM_ERANGE, "metadata: too large");
  if (reserve(b, len + 10)) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  size_t h = etsim_et__wire_put_varint(b->p + b->n, len);
  size_t put = etsim_et__wire_encode_meta(m, b->p + b->n + h);
  ETSIM_ASSERT(put == len);
  b->n += h + put;
  return 0;
}

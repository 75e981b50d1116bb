/*
 * et_int.h — private furniture of the trace library: protobuf-c glue shared
 * by the reader, the writer and the in-memory trace.
 */
#ifndef ETSIM_ET_INT_H
#define ETSIM_ET_INT_H

#include "etsim/et.h"
#include "et_def.pb-c.h"

/* Length-prefixed list payload in an arena: n elements follow the header. */
typedef struct etsim_et_blob {
  uint64_t n;
  uint64_t elem_size;
} etsim_et_blob_t;

static inline void *et_blob_data(const etsim_et_blob_t *b) {
  return (void *)(b + 1);
}

/* Element size of a list kind's elements in views (etsim_attr_t docs). */
size_t et_list_elem_size(int kind);

/* A protobuf-c allocator that bumps in `arena` and never frees. */
void et_arena_allocator(ProtobufCAllocator *out, etsim_arena_t *arena);

/* Fill a view attribute from a decoded AttributeProto (pointers alias it). */
void et_attr_from_proto(etsim_attr_t *out, const ChakraProtoMsg__AttributeProto *a);
/* Build an AttributeProto in `arena` from a view; NULL on OOM. */
ChakraProtoMsg__AttributeProto *et_attr_to_proto(const etsim_attr_t *a,
                                                 etsim_arena_t *arena);

/* Reader internals the trace loader needs. */
uint32_t et_reader_last_len(const etsim_et_reader_t *r);

#endif

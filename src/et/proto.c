/*
 * proto.c — glue between protobuf-c's generated Chakra messages and etsim's
 * views: an arena allocator for unpacking and packing, and attribute
 * conversion both ways.  Every *List message has the same layout (base,
 * n_values, values), which lets one piece of code serve all fifteen.
 */
#include "et_int.h"

#include <string.h>

typedef struct {
  ProtobufCMessage base;
  size_t n_values;
  void *values;
} generic_list_t;

static void *arena_alloc_cb(void *data, size_t size) { return etsim_arena_alloc(data, size); }
static void arena_free_cb(void *data, void *ptr) {
  (void)data;
  (void)ptr;
}

void etsim_et__arena_allocator(ProtobufCAllocator *out, etsim_arena_t *arena) {
  out->alloc = arena_alloc_cb;
  out->free = arena_free_cb;
  out->allocator_data = arena;
}

/* Descriptor of the list message for each list kind (index kind / 2). */
static const ProtobufCMessageDescriptor *list_descriptor(int kind) {
  switch (kind) {
    case ETSIM_ATTR_DOUBLE_LIST:
      return &chakra_proto_msg__double_list__descriptor;
    case ETSIM_ATTR_FLOAT_LIST:
      return &chakra_proto_msg__float_list__descriptor;
    case ETSIM_ATTR_INT32_LIST:
      return &chakra_proto_msg__int32_list__descriptor;
    case ETSIM_ATTR_INT64_LIST:
      return &chakra_proto_msg__int64_list__descriptor;
    case ETSIM_ATTR_UINT32_LIST:
      return &chakra_proto_msg__uint32_list__descriptor;
    case ETSIM_ATTR_UINT64_LIST:
      return &chakra_proto_msg__uint64_list__descriptor;
    case ETSIM_ATTR_SINT32_LIST:
      return &chakra_proto_msg__sint32_list__descriptor;
    case ETSIM_ATTR_SINT64_LIST:
      return &chakra_proto_msg__sint64_list__descriptor;
    case ETSIM_ATTR_FIXED32_LIST:
      return &chakra_proto_msg__fixed32_list__descriptor;
    case ETSIM_ATTR_FIXED64_LIST:
      return &chakra_proto_msg__fixed64_list__descriptor;
    case ETSIM_ATTR_SFIXED32_LIST:
      return &chakra_proto_msg__sfixed32_list__descriptor;
    case ETSIM_ATTR_SFIXED64_LIST:
      return &chakra_proto_msg__sfixed64_list__descriptor;
    case ETSIM_ATTR_BOOL_LIST:
      return &chakra_proto_msg__bool_list__descriptor;
    case ETSIM_ATTR_STRING_LIST:
      return &chakra_proto_msg__string_list__descriptor;
    case ETSIM_ATTR_BYTES_LIST:
      return &chakra_proto_msg__bytes_list__descriptor;
    default:
      return NULL;
  }
}

void etsim_et__attr_from_proto(etsim_attr_t *out, const ChakraProtoMsg__AttributeProto *a) {
  memset(out, 0, sizeof *out);
  out->name = a->name ? a->name : "";
  out->doc = a->doc_string ? a->doc_string : "";
  out->kind = (int)a->value_case;
  switch (out->kind) {
    case ETSIM_ATTR_NONE:
      break;
    case ETSIM_ATTR_DOUBLE:
      out->v.d = a->double_val;
      break;
    case ETSIM_ATTR_FLOAT:
      out->v.f = a->float_val;
      break;
    case ETSIM_ATTR_INT32:
      out->v.i32 = a->int32_val;
      break;
    case ETSIM_ATTR_INT64:
      out->v.i64 = a->int64_val;
      break;
    case ETSIM_ATTR_UINT32:
      out->v.u32 = a->uint32_val;
      break;
    case ETSIM_ATTR_UINT64:
      out->v.u64 = a->uint64_val;
      break;
    case ETSIM_ATTR_SINT32:
      out->v.i32 = a->sint32_val;
      break;
    case ETSIM_ATTR_SINT64:
      out->v.i64 = a->sint64_val;
      break;
    case ETSIM_ATTR_FIXED32:
      out->v.u32 = a->fixed32_val;
      break;
    case ETSIM_ATTR_FIXED64:
      out->v.u64 = a->fixed64_val;
      break;
    case ETSIM_ATTR_SFIXED32:
      out->v.i32 = a->sfixed32_val;
      break;
    case ETSIM_ATTR_SFIXED64:
      out->v.i64 = a->sfixed64_val;
      break;
    case ETSIM_ATTR_BOOL:
      out->v.b = a->bool_val != 0;
      break;
    case ETSIM_ATTR_STRING:
      out->v.s = a->string_val ? a->string_val : "";
      break;
    case ETSIM_ATTR_BYTES:
      out->v.bytes.len = a->bytes_val.len;
      out->v.bytes.data = a->bytes_val.data;
      break;
    default: {
      /* All list members of the union are pointers to a generic_list_t. */
      const generic_list_t *l = (const generic_list_t *)a->double_list;
      out->v.list.n = l ? l->n_values : 0;
      out->v.list.v = l ? l->values : NULL;
      break;
    }
  }
}

ChakraProtoMsg__AttributeProto *etsim_et__attr_to_proto(const etsim_attr_t *a,
                                                        etsim_arena_t *arena) {
  ChakraProtoMsg__AttributeProto *p = etsim_arena_alloc(arena, sizeof *p);
  if (!p) return NULL;
  chakra_proto_msg__attribute_proto__init(p);
  p->name = (char *)(a->name ? a->name : "");
  p->doc_string = (char *)(a->doc ? a->doc : "");
  p->value_case = (ChakraProtoMsg__AttributeProto__ValueCase)a->kind;
  switch (a->kind) {
    case ETSIM_ATTR_NONE:
      break;
    case ETSIM_ATTR_DOUBLE:
      p->double_val = a->v.d;
      break;
    case ETSIM_ATTR_FLOAT:
      p->float_val = a->v.f;
      break;
    case ETSIM_ATTR_INT32:
      p->int32_val = a->v.i32;
      break;
    case ETSIM_ATTR_INT64:
      p->int64_val = a->v.i64;
      break;
    case ETSIM_ATTR_UINT32:
      p->uint32_val = a->v.u32;
      break;
    case ETSIM_ATTR_UINT64:
      p->uint64_val = a->v.u64;
      break;
    case ETSIM_ATTR_SINT32:
      p->sint32_val = a->v.i32;
      break;
    case ETSIM_ATTR_SINT64:
      p->sint64_val = a->v.i64;
      break;
    case ETSIM_ATTR_FIXED32:
      p->fixed32_val = a->v.u32;
      break;
    case ETSIM_ATTR_FIXED64:
      p->fixed64_val = a->v.u64;
      break;
    case ETSIM_ATTR_SFIXED32:
      p->sfixed32_val = a->v.i32;
      break;
    case ETSIM_ATTR_SFIXED64:
      p->sfixed64_val = a->v.i64;
      break;
    case ETSIM_ATTR_BOOL:
      p->bool_val = a->v.b != 0;
      break;
    case ETSIM_ATTR_STRING:
      p->string_val = (char *)(a->v.s ? a->v.s : "");
      break;
    case ETSIM_ATTR_BYTES:
      p->bytes_val.len = a->v.bytes.len;
      p->bytes_val.data = (uint8_t *)a->v.bytes.data;
      break;
    default: {
      const ProtobufCMessageDescriptor *d = list_descriptor(a->kind);
      if (!d) return NULL;
      generic_list_t *l = etsim_arena_alloc(arena, d->sizeof_message);
      if (!l) return NULL;
      protobuf_c_message_init(d, l);
      l->n_values = a->v.list.n;
      l->values = (void *)a->v.list.v;
      p->double_list = (ChakraProtoMsg__DoubleList *)l;
      break;
    }
  }
  return p;
}

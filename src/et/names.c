/*
 * names.c — names of node types, collective types and attribute kinds, and
 * the small attribute helpers shared by all views.
 */
#include "et_int.h"

#include <string.h>

static const char *const node_type_names[] = {"INVALID_NODE",   "METADATA_NODE", "MEM_LOAD_NODE",
                                              "MEM_STORE_NODE", "COMP_NODE",     "COMM_SEND_NODE",
                                              "COMM_RECV_NODE", "COMM_COLL_NODE"};

static const char *const coll_names[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};

/* Index = kind (oneof field number). */
static const char *const kind_names[ETSIM_ATTR_KIND_MAX + 1] = {[ETSIM_ATTR_NONE] = "none",
#define KIND_NAMES(K, name) \
  [ETSIM_ATTR_##K] = #name "_val", [ETSIM_ATTR_##K##_LIST] = #name "_list",
                                                                ETSIM_ET_KINDS(KIND_NAMES)
#undef KIND_NAMES
};

const char *etsim_et_node_type_name(int type) {
  return type >= 0 && type < ETSIM_ET_NODE_TYPE_COUNT ? node_type_names[type] : "?";
}

const char *etsim_coll_type_name(int coll) {
  return coll >= 0 && coll < ETSIM_COLL_TYPE_COUNT ? coll_names[coll] : "?";
}

int etsim_et_node_type_parse(const char *s) {
  for (int i = 0; i < ETSIM_ET_NODE_TYPE_COUNT; i++)
    if (strcmp(s, node_type_names[i]) == 0) return i;
  return -1;
}

int etsim_coll_type_parse(const char *s) {
  for (int i = 0; i < ETSIM_COLL_TYPE_COUNT; i++)
    if (strcmp(s, coll_names[i]) == 0) return i;
  return -1;
}

const char *etsim_attr_kind_name(int kind) {
  if (kind < 0 || kind > ETSIM_ATTR_KIND_MAX || !kind_names[kind]) return "?";
  return kind_names[kind];
}

int etsim_attr_kind_parse(const char *s) {
  for (int i = 0; i <= ETSIM_ATTR_KIND_MAX; i++)
    if (kind_names[i] && strcmp(s, kind_names[i]) == 0) return i;
  return -1;
}

int etsim_attr_kind_is_int(int kind) {
  switch (kind) {
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_SINT32:
    case ETSIM_ATTR_SINT64:
    case ETSIM_ATTR_FIXED32:
    case ETSIM_ATTR_FIXED64:
    case ETSIM_ATTR_SFIXED32:
    case ETSIM_ATTR_SFIXED64:
      return 1;
    default:
      return 0;
  }
}

int etsim_attr_kind_is_list(int kind) {
  return kind >= ETSIM_ATTR_DOUBLE_LIST && kind <= ETSIM_ATTR_KIND_MAX && kind % 2 == 0;
}

int etsim_attr_as_int(const etsim_attr_t *a, int64_t *out) {
  switch (a->kind) {
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_SINT32:
    case ETSIM_ATTR_SFIXED32:
      *out = a->v.i32;
      return 0;
    case ETSIM_ATTR_INT64:
    case ETSIM_ATTR_SINT64:
    case ETSIM_ATTR_SFIXED64:
      *out = a->v.i64;
      return 0;
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_FIXED32:
      *out = a->v.u32;
      return 0;
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_FIXED64:
      if (a->v.u64 > (uint64_t)INT64_MAX) return ETSIM_ERANGE;
      *out = (int64_t)a->v.u64;
      return 0;
    case ETSIM_ATTR_BOOL:
      *out = a->v.b != 0;
      return 0;
    default:
      return ETSIM_EFORMAT;
  }
}

const etsim_attr_t *etsim_et_node_attr(const etsim_et_node_t *n, const char *name) {
  for (size_t i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

size_t etsim_et__list_elem_size(int kind) {
  switch (kind) {
    case ETSIM_ATTR_DOUBLE_LIST:
      return sizeof(double);
    case ETSIM_ATTR_FLOAT_LIST:
      return sizeof(float);
    case ETSIM_ATTR_INT32_LIST:
    case ETSIM_ATTR_SINT32_LIST:
    case ETSIM_ATTR_SFIXED32_LIST:
    case ETSIM_ATTR_UINT32_LIST:
    case ETSIM_ATTR_FIXED32_LIST:
      return 4;
    case ETSIM_ATTR_INT64_LIST:
    case ETSIM_ATTR_SINT64_LIST:
    case ETSIM_ATTR_SFIXED64_LIST:
    case ETSIM_ATTR_UINT64_LIST:
    case ETSIM_ATTR_FIXED64_LIST:
      return 8;
    case ETSIM_ATTR_BOOL_LIST:
      return sizeof(int);
    case ETSIM_ATTR_STRING_LIST:
      return sizeof(char *);
    case ETSIM_ATTR_BYTES_LIST:
      return sizeof(etsim_bytes_t);
    default:
      return 0;
  }
}

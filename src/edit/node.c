/*
 * node.c — the working copy of one node while it streams through the
 * operation chain: attribute access that keeps each attribute's kind (so
 * an edit never turns an int64 comm_size into something a feeder reads as
 * 0), the node's time in ns, and predicate matching.
 *
 * A working copy borrows every string from the reader's view or from the
 * job's per-node arena; nothing here allocates per node once the arrays
 * have grown to the largest node.
 */
#include "edit_int.h"

#include <string.h>

int etsim_edit__node_from_view(ed_node_t *x, const etsim_et_node_t *v) {
  x->n = *v;
  if (v->inputs) x->io[0] = *v->inputs;
  if (v->outputs) x->io[1] = *v->outputs;
  x->n.inputs = v->inputs ? &x->io[0] : NULL;
  x->n.outputs = v->outputs ? &x->io[1] : NULL;
  if (etsim_grow((void **)&x->attrs, &x->cap_attrs, v->n_attrs + 4, sizeof *x->attrs))
    return ETSIM_ENOMEM;
  if (v->n_attrs) memcpy(x->attrs, v->attrs, v->n_attrs * sizeof *x->attrs);
  x->n.attrs = x->attrs;
  size_t nd = v->n_data_deps + v->n_ctrl_deps;
  if (etsim_grow((void **)&x->deps, &x->cap_deps, nd + 1, sizeof *x->deps)) return ETSIM_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < v->n_data_deps; i++) x->deps[k++] = (ed_dep_t){v->data_deps[i], 0};
  for (size_t i = 0; i < v->n_ctrl_deps; i++)
    x->deps[k++] = (ed_dep_t){v->ctrl_deps[i], ED_DEP_CTRL};
  x->n_deps = k;
  x->born = -1;
  x->anchor = UINT32_MAX;
  x->bits = 0;
  x->changed = 0;
  return 0;
}

void etsim_edit__node_free(ed_node_t *x) {
  etsim_free(x->attrs);
  etsim_free(x->deps);
  x->attrs = NULL;
  x->deps = NULL;
  x->cap_attrs = x->cap_deps = 0;
}

etsim_attr_t *etsim_edit__node_attr(ed_node_t *x, const char *name) {
  for (size_t i = 0; i < x->n.n_attrs; i++)
    if (strcmp(x->attrs[i].name, name) == 0) return &x->attrs[i];
  return NULL;
}

int etsim_edit__node_int(const ed_node_t *x, const char *name, int64_t *out) {
  for (size_t i = 0; i < x->n.n_attrs; i++)
    if (strcmp(x->attrs[i].name, name) == 0) return etsim_attr_as_int(&x->attrs[i], out) == 0;
  return 0;
}

int etsim_edit__node_add_attr(ed_node_t *x, const etsim_attr_t *a) {
  if (etsim_grow((void **)&x->attrs, &x->cap_attrs, x->n.n_attrs + 1, sizeof *x->attrs))
    return ETSIM_ENOMEM;
  x->attrs[x->n.n_attrs++] = *a;
  x->n.attrs = x->attrs;
  return 0;
}

/* Store v in a's integer kind (clamped to its range). */
static void store_int(etsim_attr_t *a, int64_t v) {
  switch (a->kind) {
    case ETSIM_ATTR_INT32:
    case ETSIM_ATTR_SINT32:
    case ETSIM_ATTR_SFIXED32:
      a->v.i32 = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
      break;
    case ETSIM_ATTR_UINT32:
    case ETSIM_ATTR_FIXED32:
      a->v.u32 = v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
      break;
    case ETSIM_ATTR_UINT64:
    case ETSIM_ATTR_FIXED64:
      a->v.u64 = v < 0 ? 0 : (uint64_t)v;
      break;
    case ETSIM_ATTR_BOOL:
      a->v.b = v != 0;
      break;
    default:
      a->v.i64 = v;
  }
}

int etsim_edit__node_set_int(ed_node_t *x, const char *name, int kind, int64_t v) {
  etsim_attr_t *a = etsim_edit__node_attr(x, name);
  if (a && (etsim_attr_kind_is_int(a->kind) || a->kind == ETSIM_ATTR_BOOL)) {
    store_int(a, v);
    return 0;
  }
  if (a) etsim_edit__node_del(x, name); /* a non-integer of that name: replaced */
  etsim_attr_t n = {.name = name, .doc = "", .kind = kind};
  store_int(&n, v);
  return etsim_edit__node_add_attr(x, &n);
}

int etsim_edit__node_set_str(ed_node_t *x, const char *name, const char *v) {
  etsim_attr_t *a = etsim_edit__node_attr(x, name);
  if (a) {
    a->kind = ETSIM_ATTR_STRING;
    a->v.s = v;
    return 0;
  }
  etsim_attr_t n = {.name = name, .doc = "", .kind = ETSIM_ATTR_STRING};
  n.v.s = v;
  return etsim_edit__node_add_attr(x, &n);
}

void etsim_edit__node_del(ed_node_t *x, const char *name) {
  size_t k = 0;
  for (size_t i = 0; i < x->n.n_attrs; i++)
    if (strcmp(x->attrs[i].name, name) != 0) x->attrs[k++] = x->attrs[i];
  x->n.n_attrs = k;
}

uint64_t etsim_edit__node_ns(const ed_node_t *x) {
  int64_t ns;
  if (etsim_edit__node_int(x, "duration_ns", &ns) && ns > 0) return (uint64_t)ns;
  return x->n.duration_micros * 1000;
}

int etsim_edit__node_set_ns(ed_node_t *x, uint64_t ns) {
  uint64_t us = ns / 1000 + (ns % 1000 >= 500);
  x->n.duration_micros = us;
  uint64_t back = us * 1000, diff = back > ns ? back - ns : ns - back;
  /* The generators' rule (gen.h): the exact time rides along when whole
   * microseconds are off by more than 0.1 %. */
  if (diff * 1000 > ns)
    return etsim_edit__node_set_int(x, "duration_ns", ETSIM_ATTR_INT64, (int64_t)ns);
  etsim_edit__node_del(x, "duration_ns");
  return 0;
}

int etsim_edit__pred_match(const ed_pred_t *p, const ed_node_t *x) {
  if (p->any) return 1;
  if (p->types && !(p->types & (1u << (x->n.type & 31)))) return 0;
  if (p->has_ids && (x->born >= 0 || x->n.id < p->id_lo || x->n.id > p->id_hi)) return 0;
  if (p->colls) {
    int64_t c;
    if (!etsim_edit__node_int(x, "comm_type", &c) || c < 0 || c >= ETSIM_COLL_TYPE_COUNT ||
        !(p->colls & (1u << c)))
      return 0;
  }
  if (p->cpu >= 0) {
    int64_t c = 0;
    etsim_edit__node_int(x, "is_cpu_op", &c);
    if ((c != 0) != p->cpu) return 0;
  }
  if (p->attr) {
    int found = 0;
    for (size_t i = 0; i < x->n.n_attrs && !found; i++)
      found = strcmp(x->attrs[i].name, p->attr) == 0;
    if (!found) return 0;
  }
  if (p->has_re && regexec(&p->re, x->n.name, 0, NULL, 0) != 0) return 0;
  return 1;
}

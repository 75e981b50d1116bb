/* ASTRA-sim's remote-memory and communicator-group JSON files. */
#include "etsim/sim.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int etsim_mem_config_load(const char *path, etsim_mem_config_t *m, etsim_error_t *err) {
  memset(m, 0, sizeof *m);
  json_t *root;
  int rc0 = etsim_json_load(path, JSON_REJECT_DUPLICATES, &root, err);
  if (rc0) return rc0;
  int rc = 0;
  const char *key;
  json_t *v;
  if (!json_is_object(root)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: expected a JSON object", path);
    goto out;
  }
  int have_type = 0, have_in = 0;
  json_object_foreach(root, key, v) {
    if (strcmp(key, "memory-type") == 0) {
      static const char *const names[] = {"NO_MEMORY_EXPANSION", "PER_NODE_MEMORY_EXPANSION",
                                          "PER_NPU_MEMORY_EXPANSION", "MEMORY_POOL",
                                          "HIERARCHICAL_MEMORY_POOL"};
      const char *s = json_string_value(v);
      int found = -1;
      for (int i = 0; s && i < 5; i++)
        if (strcmp(s, names[i]) == 0) found = i;
      if (found < 0) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: key \"memory-type\": expected "
                             "NO_MEMORY_EXPANSION, PER_NODE_MEMORY_EXPANSION, "
                             "PER_NPU_MEMORY_EXPANSION, MEMORY_POOL or HIERARCHICAL_MEMORY_POOL",
                             path);
        goto out;
      }
      m->type = (etsim_mem_type_t)found;
      have_type = 1;
    } else if (strcmp(key, "num-nodes") == 0 || strcmp(key, "num-npus-per-node") == 0 ||
               strcmp(key, "remote-mem-latency") == 0 || strcmp(key, "remote-mem-bw") == 0) {
      if (!json_is_number(v) || json_number_value(v) < 0) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected a non-negative number",
                             path, key);
        goto out;
      }
      double x = json_number_value(v);
      if (key[0] == 'r' && strstr(key, "latency")) m->latency_ns = x;
      else if (key[0] == 'r') m->bw_bytes_per_ns = x;
      else if (strcmp(key, "num-nodes") == 0) m->num_nodes = (uint32_t)x;
      else m->npus_per_node = (uint32_t)x;
    } else if (strcmp(key, "in-switch-reduction") == 0) {
      if (!json_is_boolean(v)) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected true or false", path,
                             key);
        goto out;
      }
      m->in_switch_reduction = json_is_true(v);
    } else if (strcmp(key, "in-node-pool-latency") == 0 || strcmp(key, "in-node-pool-bw") == 0 ||
               strcmp(key, "out-node-pool-latency") == 0 || strcmp(key, "out-node-pool-bw") == 0 ||
               strcmp(key, "in-switch-reduction-bw") == 0) {
      if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected a non-negative number",
                             path, key);
        goto out;
      }
      double x = json_number_value(v);
      int lat = strstr(key, "latency") != NULL;
      if (key[0] == 'o') *(lat ? &m->out_latency_ns : &m->out_bw_bytes_per_ns) = x;
      else if (strstr(key, "switch")) m->reduction_bw_bytes_per_ns = x;
      else *(lat ? &m->in_latency_ns : &m->in_bw_bytes_per_ns) = x;
      have_in |= key[0] == 'i' && !strstr(key, "switch") ? (lat ? 1 : 2) : 0;
    } else {
      etsim_warn("%s: unknown key \"%s\" ignored", path, key);
    }
  }
  if (m->type == ETSIM_MEM_HIER_POOL) {
    /* the in-node pool defaults to ASTRA-sim's remote memory */
    if (!(have_in & 1)) m->in_latency_ns = m->latency_ns;
    if (!(have_in & 2)) m->in_bw_bytes_per_ns = m->bw_bytes_per_ns;
    if (!(m->out_bw_bytes_per_ns > 0) || !(m->in_bw_bytes_per_ns > 0) || !m->npus_per_node) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: HIERARCHICAL_MEMORY_POOL needs \"num-npus-per-node\", "
                           "\"in-node-pool-bw\" (or \"remote-mem-bw\") and \"out-node-pool-bw\" "
                           "above 0",
                           path);
      goto out;
    }
  }
  if (!have_type)
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: missing required key \"memory-type\"", path);
out:
  json_decref(root);
  return rc;
}

void etsim_comm_groups_free(etsim_comm_groups_t *g) {
  for (size_t i = 0; i < g->n; i++) etsim_free((void *)g->g[i].members);
  etsim_free(g->g);
  memset(g, 0, sizeof *g);
}

int etsim_comm_groups_load(const char *path, uint32_t n_npus, etsim_comm_groups_t *out,
                           etsim_error_t *err) {
  memset(out, 0, sizeof *out);
  json_t *root;
  int rc0 = etsim_json_load(path, JSON_REJECT_DUPLICATES, &root, err);
  if (rc0) return rc0;
  int rc = 0;
  if (!json_is_object(root)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: expected an object {\"<group id>\": [ranks]}",
                         path);
    goto out;
  }
  out->g = etsim_calloc(json_object_size(root) + 1, sizeof *out->g);
  if (!out->g) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    goto out;
  }
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    char *end;
    unsigned long id = strtoul(key, &end, 10);
    if (*end || !*key || id == 0 || id > 2000000) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: group \"%s\": ids are positive integers (0 is "
                           "reserved for all NPUs)",
                           path, key);
      goto out;
    }
    if (!json_is_array(v) || json_array_size(v) == 0) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: group \"%s\": expected a non-empty list of ranks", path, key);
      goto out;
    }
    size_t n = json_array_size(v);
    uint32_t *mem = etsim_malloc(n * sizeof *mem);
    if (!mem) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
      goto out;
    }
    etsim_comm_t *g = &out->g[out->n++];
    g->id = (uint32_t)id;
    g->n = (uint32_t)n;
    g->members = mem;
    for (size_t i = 0; i < n; i++) {
      json_t *x = json_array_get(v, i);
      json_int_t r = json_is_integer(x) ? json_integer_value(x) : -1;
      if (r < 0 || r >= (json_int_t)n_npus) {
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: group \"%s\"[%zu]: rank %lld is outside the "
                             "%u-NPU network",
                             path, key, i, (long long)r, n_npus);
        goto out;
      }
      for (size_t j = 0; j < i; j++)
        if (mem[j] == (uint32_t)r) {
          rc = etsim_error_set(err, ETSIM_EINVAL, "%s: group \"%s\": rank %lld listed twice", path,
                               key, (long long)r);
          goto out;
        }
      mem[i] = (uint32_t)r;
    }
  }
out:
  json_decref(root);
  if (rc) etsim_comm_groups_free(out);
  return rc;
}

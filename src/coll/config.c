/* ASTRA-sim's system JSON, read with jansson.
 *
 * Every key ASTRA-sim reads is recognised; keys that only tune ASTRA-sim's
 * own debugging (trace-enabled, track-local-mem, ...) are accepted and
 * ignored with a note in docs/sim.md; unknown keys are a warning naming the
 * key.  preferred-dataset-splits is required (ASTRA-sim divides by zero
 * without it).
 */
#include "coll_int.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

void etsim_sys_config_defaults(etsim_sys_config_t *c) {
  memset(c, 0, sizeof *c);
  c->scheduling = ETSIM_SCHED_LIFO;
  c->active_chunks = 1;
  c->endpoint_delay_ns = 10;
  c->queues_per_dim = 1;
  for (int t = 0; t < ETSIM_COP_N; t++) {
    c->n_impl[t] = t < ETSIM_COP_ASTRA_N ? 1 : 0;
    c->impl[t][0] = (etsim_coll_impl_t){ETSIM_ALGO_RING, -1};
  }
}

void etsim_sys_config_free(etsim_sys_config_t *c) {
  for (int t = 0; t < ETSIM_COP_N; t++) {
    etsim_free(c->custom[t]);
    c->custom[t] = NULL;
  }
  etsim_free(c->dir);
  c->dir = NULL;
}

static int num(json_t *v, const char *path, const char *key, double *out, etsim_error_t *err) {
  if (json_is_number(v)) {
    *out = json_number_value(v);
    if (isfinite(*out)) return 0;
  }
  if (json_is_boolean(v)) {
    *out = json_is_true(v);
    return 0;
  }
  return etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected a number", path, key);
}

static const char *const impl_keys[ETSIM_COP_N] = {
    "all-reduce-implementation", "reduce-scatter-implementation", "all-gather-implementation",
    "all-to-all-implementation", "broadcast-implementation",      "reduce-implementation",
    "gather-implementation",     "scatter-implementation",        "barrier-implementation"};

/* A list of one value per dimension (or one value for every dimension):
 * booleans for in-network-collectives, numbers for in-network-reduction-bw. */
static int dim_list(json_t *v, const char *path, const char *key, int boolean, double *out,
                    etsim_error_t *err) {
  size_t n = json_is_array(v) ? json_array_size(v) : 1;
  if (n == 0 || n > ETSIM_TOPO_MAX_DIMS)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected 1 to %d entries", path,
                           key, ETSIM_TOPO_MAX_DIMS);
  for (size_t i = 0; i < ETSIM_TOPO_MAX_DIMS; i++) {
    json_t *x = json_is_array(v) ? json_array_get(v, i < n ? i : n - 1) : v;
    if (json_is_array(v) && i >= n) {
      /* a list covers only the dimensions it names */
      out[i] = 0;
      continue;
    }
    if (boolean ? !json_is_boolean(x) : !json_is_number(x))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\"[%zu]: expected %s", path, key, i,
                             boolean ? "true or false" : "a number of GB/s");
    out[i] = boolean ? json_is_true(x) : json_number_value(x);
    if (!boolean && !(out[i] >= 0 && isfinite(out[i])))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\"[%zu]: must not be negative", path,
                             key, i);
  }
  return 0;
}

/* A string key with two values: 0 for the first, 1 for the second. */
static int two_way(json_t *v, const char *path, const char *key, const char *a, const char *b,
                   int *out, etsim_error_t *err) {
  const char *s = json_string_value(v);
  if (s && strcmp(s, a) == 0) *out = 0;
  else if (s && strcmp(s, b) == 0) *out = 1;
  else
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected \"%s\" or \"%s\"", path,
                           key, a, b);
  return 0;
}

/* Entry i of the implementation list `key` (collectives of type t): a name
 * in the registry (algo.c) that type may use. */
static int impl_entry(json_t *v, const char *path, const char *key, size_t i, int t,
                      etsim_coll_impl_t *out, etsim_error_t *err) {
  char names[256];
  const char *s = json_string_value(v);
  int32_t window;
  const etsim_coll__algo_t *a = s ? etsim_coll__algo_find(s, &window) : NULL;
  if (!a) {
    etsim_coll__algo_names(-1, names, sizeof names);
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: key \"%s\"[%zu]: unknown algorithm \"%s\" (expected %s)", path, key,
                           i, s ? s : "(not a string)", names);
  }
  if (!etsim_coll__algo_allowed(a, t)) {
    etsim_coll__algo_names(t, names, sizeof names);
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: key \"%s\"[%zu]: %s is not an algorithm for %s (%s)", path, key, i,
                           s, etsim_coll_op_name((etsim_cop_t)t), names);
  }
  *out = (etsim_coll_impl_t){a->kind, window};
  return 0;
}

static const char *const ignored_keys[] = {"boost-mode",
                                           "trace-enabled",
                                           "track-local-mem",
                                           "local-mem-trace-filename",
                                           "local-reduction-delay",
                                           "model-shared-bus",
                                           "L",
                                           "o",
                                           "g",
                                           "G",
                                           "intra-dimension-scheduling",
                                           "inter-dimension-scheduling",
                                           NULL};

/* Every other key: an implementation list (`all-reduce-implementation`),
 * a custom collective's trace prefix (`...-implementation-custom`), a key
 * only ASTRA-sim's debugging reads (ignored), or an unknown one (a
 * warning). */
static int impl_key(etsim_sys_config_t *c, const char *path, const char *key, json_t *v,
                    etsim_error_t *err) {
  for (int t = 0; t < ETSIM_COP_N; t++) {
    size_t kl = strlen(impl_keys[t]);
    if (strcmp(key, impl_keys[t]) == 0) {
      if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > ETSIM_TOPO_MAX_DIMS)
        return etsim_error_set(err, ETSIM_EFORMAT,
                               "%s: key \"%s\": expected a list of 1 to %d "
                               "algorithm names",
                               path, key, ETSIM_TOPO_MAX_DIMS);
      c->n_impl[t] = (int)json_array_size(v);
      for (size_t i = 0; i < json_array_size(v); i++) {
        int rc = impl_entry(json_array_get(v, i), path, key, i, t, &c->impl[t][i], err);
        if (rc) return rc;
      }
      return 0;
    }
    if (strncmp(key, impl_keys[t], kl) == 0 && strcmp(key + kl, "-custom") == 0) {
      const char *s = json_is_array(v) && json_array_size(v) == 1
                          ? json_string_value(json_array_get(v, 0))
                          : NULL;
      if (!s)
        return etsim_error_set(err, ETSIM_EFORMAT,
                               "%s: key \"%s\": expected a list of one "
                               "trace prefix",
                               path, key);
      c->custom[t] = etsim_strdup(s);
      if (!c->custom[t]) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
      return 0;
    }
  }
  for (int i = 0; ignored_keys[i]; i++)
    if (strcmp(key, ignored_keys[i]) == 0) return 0;
  etsim_warn("%s: unknown key \"%s\" ignored", path, key);
  return 0;
}

int etsim_sys_config_load(const char *path, etsim_sys_config_t *c, etsim_error_t *err) {
  etsim_sys_config_defaults(c);
  json_t *root;
  int rc0 = etsim_json_load(path, JSON_REJECT_DUPLICATES, &root, err);
  if (rc0) return rc0;
  int rc = 0, have_splits = 0;
  if (!json_is_object(root)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: expected a JSON object", path);
    goto out;
  }
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    double x = 0;
    if (strcmp(key, "scheduling-policy") == 0) {
      const char *s = json_string_value(v);
      if (!s) goto bad_string;
      if (strcmp(s, "LIFO") == 0) c->scheduling = ETSIM_SCHED_LIFO;
      else if (strcmp(s, "FIFO") == 0) c->scheduling = ETSIM_SCHED_FIFO;
      else if (strcmp(s, "EXPLICIT") == 0) c->scheduling = ETSIM_SCHED_EXPLICIT;
      else {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: key \"%s\": unknown policy \"%s\" (expected "
                             "LIFO, FIFO or EXPLICIT)",
                             path, key, s);
        goto out;
      }
    } else if (strcmp(key, "collective-optimization") == 0) {
      const char *s = json_string_value(v);
      if (!s) goto bad_string;
      if (strcmp(s, "baseline") == 0) c->local_bw_aware = 0;
      else if (strcmp(s, "localBWAware") == 0) c->local_bw_aware = 1;
      else {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: key \"%s\": unknown optimization \"%s\" "
                             "(expected baseline or localBWAware)",
                             path, key, s);
        goto out;
      }
    } else if (strcmp(key, "active-chunks-per-dimension") == 0 ||
               strcmp(key, "preferred-dataset-splits") == 0) {
      if ((rc = num(v, path, key, &x, err))) goto out;
      if (x < 1 || x != (double)(uint32_t)x) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected a positive integer",
                             path, key);
        goto out;
      }
      /* Every split is a chunk with streams of its own, and the system
       * layer's cost grows with their square: 16,384 splits of one 8-NPU
       * all-reduce took 8 s, 10^6 more than 300 s.  ASTRA-sim's own
       * configurations use 1 to 256. */
      if (x > ETSIM_COLL_MAX_SPLITS) {
        rc = etsim_error_set(err, ETSIM_ERANGE, "%s: key \"%s\": %.0f is more than %d", path, key,
                             x, ETSIM_COLL_MAX_SPLITS);
        goto out;
      }
      if (key[0] == 'a') c->active_chunks = (uint32_t)x;
      else {
        c->splits = (uint32_t)x;
        have_splits = 1;
      }
    } else if (strcmp(key, "endpoint-delay") == 0) {
      if ((rc = num(v, path, key, &x, err))) goto out;
      if (x < 0) goto bad_neg;
      if (!(x <= ETSIM_COLL_MAX_DELAY_NS)) {
        rc = etsim_error_set(err, ETSIM_ERANGE, "%s: key \"%s\": %g ns is more than %g ns", path,
                             key, x, ETSIM_COLL_MAX_DELAY_NS);
        goto out;
      }
      c->endpoint_delay_ns = (int64_t)x;
    } else if (strcmp(key, "local-mem-bw") == 0) {
      if ((rc = num(v, path, key, &x, err))) goto out;
      if (x < 0) goto bad_neg;
      c->local_mem_bw_gbps = x;
    } else if (strcmp(key, "peak-perf") == 0) {
      if ((rc = num(v, path, key, &x, err))) goto out;
      if (x < 0) goto bad_neg;
      c->peak_perf_tflops = x;
    } else if (strcmp(key, "in-network-collectives") == 0 ||
               strcmp(key, "in-network-reduction-bw") == 0) {
      double vals[ETSIM_TOPO_MAX_DIMS];
      int boolean = key[11] == 'c';
      if ((rc = dim_list(v, path, key, boolean, vals, err))) goto out;
      for (int d = 0; d < ETSIM_TOPO_MAX_DIMS; d++)
        if (boolean) c->in_network[d] = vals[d] != 0;
        else c->in_network_bw_gbps[d] = vals[d];
    } else if (strcmp(key, "rooted-collectives") == 0) {
      if ((rc = two_way(v, path, key, "replay", "network", &c->rooted_network, err))) goto out;
    } else if (strcmp(key, "group-phases") == 0) {
      if ((rc = two_way(v, path, key, "flat", "hierarchical", &c->group_hierarchical, err)))
        goto out;
    } else if (strcmp(key, "roofline-enabled") == 0 || strcmp(key, "replay-only") == 0) {
      if ((rc = num(v, path, key, &x, err))) goto out;
      if (key[0] == 'r' && key[1] == 'o') c->roofline = x != 0;
      else c->replay_only = x != 0;
    } else if ((rc = impl_key(c, path, key, v, err))) {
      goto out;
    }
    continue;
  bad_string:
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": expected a string", path, key);
    goto out;
  bad_neg:
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: key \"%s\": must not be negative", path, key);
    goto out;
  }
  if (!rc) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    c->dir = etsim_malloc(n + 1);
    if (!c->dir) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
      goto out;
    }
    memcpy(c->dir, slash ? path : ".", n);
    c->dir[n] = 0;
  }
  if (!have_splits)
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: missing required key \"preferred-dataset-splits\"", path);
  if (!rc && c->local_mem_bw_gbps == 0)
    etsim_warn("%s: no \"local-mem-bw\": reductions cost nothing (as in ASTRA-sim)", path);
out:
  json_decref(root);
  if (rc) etsim_sys_config_free(c);
  return rc;
}

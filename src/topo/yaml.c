/* Reading ASTRA-sim's network YAML through libyaml's document API.
 *
 *   topology: [ Ring, FullyConnected, Switch ]
 *   npus_count: [ 8, 8, 16 ]
 *   bandwidth: [ 200.0, 100.0, 50.0 ]   # GB/s
 *   latency: [ 50.0, 500.0, 2000.0 ]    # ns
 *
 * Every error names the file and the 1-based line of the offending node.
 */
#include "etsim/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum { K_TOPO, K_NPUS, K_BW, K_LAT, K_N };
static const char *const key_names[K_N] = {"topology", "npus_count", "bandwidth", "latency"};

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

/* Collect the scalar items of a sequence (or a lone scalar) under key k. */
static int items(yaml_document_t *doc, yaml_node_t *v, const char *path, const char *key,
                 yaml_node_t **out, int *n_out, etsim_error_t *err) {
  int n = 0;
  if (v->type == YAML_SCALAR_NODE) {
    out[n++] = v;
  } else if (v->type == YAML_SEQUENCE_NODE) {
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
      yaml_node_t *x = yaml_document_get_node(doc, *it);
      if (!x || x->type != YAML_SCALAR_NODE)
        return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: %s: items must be scalars", path,
                               x ? line_of(x) : line_of(v), key);
      if (n == ETSIM_TOPO_MAX_DIMS)
        return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: %s: more than %d dimensions", path,
                               line_of(x), key, ETSIM_TOPO_MAX_DIMS);
      out[n++] = x;
    }
  } else {
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: %s: expected a list", path, line_of(v), key);
  }
  if (n == 0)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: %s: empty list", path, line_of(v), key);
  *n_out = n;
  return 0;
}

static int number(yaml_node_t *x, const char *path, const char *key, int idx, int integer,
                  double *out, etsim_error_t *err) {
  const char *s = (const char *)x->data.scalar.value;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: %s[%d]: \"%s\" is not a number", path,
                           line_of(x), key, idx, s);
  if (integer && (v != (double)(long long)v || v < 1 || v > 2147483647.0))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: %s[%d]: \"%s\" is not a positive integer",
                           path, line_of(x), key, idx, s);
  *out = v;
  return 0;
}

/* A network file nests two levels (a mapping of lists).  libyaml's loader
 * is quadratic in the nesting depth (100,000 levels took 81 s), so the
 * events are read first and a file nesting deeper than this is refused
 * before anything is built.  A syntax error is left to the loader, which
 * reports it with its position. */
#define MAX_DEPTH 16

static int check_depth(const char *text, size_t len, const char *path, etsim_error_t *err) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: cannot initialise the YAML parser", path);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int depth = 0, rc = 0;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) break;
    yaml_event_type_t type = ev.type;
    yaml_mark_t m = ev.start_mark;
    yaml_event_delete(&ev);
    if (type == YAML_STREAM_END_EVENT) break;
    if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
      if (++depth > MAX_DEPTH) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s:%d:%d: nested more than %d levels deep (a network file "
                             "has 2)",
                             path, (int)m.line + 1, (int)m.column + 1, MAX_DEPTH);
        break;
      }
    } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
      depth--;
    }
  }
  yaml_parser_delete(&p);
  return rc;
}

int etsim_topo_load_yaml(const char *path, etsim_topo_t *t, etsim_error_t *err) {
  /* Read whole (a network file takes bytes; 16 MiB bounds a stream), so
   * the depth check and the loader read the same text, pipes included. */
  char *text;
  size_t len;
  int rc = etsim_read_text(path, (size_t)16 << 20, &text, &len, err);
  if (rc) return rc;
  yaml_parser_t p;
  yaml_document_t doc;
  if ((rc = check_depth(text, len, path, err)) != 0) {
    etsim_free(text);
    return rc;
  }
  if (!yaml_parser_initialize(&p)) {
    etsim_free(text);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: cannot initialise the YAML parser", path);
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  if (!yaml_parser_load(&p, &doc)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: %s", path, (int)p.problem_mark.line + 1,
                         (int)p.problem_mark.column + 1,
                         p.problem ? p.problem : "YAML syntax error");
    yaml_parser_delete(&p);
    etsim_free(text);
    return rc;
  }
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  yaml_node_t *val[K_N] = {0};
  yaml_node_t *keyn[K_N] = {0};
  if (!root || root->type != YAML_MAPPING_NODE) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: expected a mapping with keys topology, "
                         "npus_count, bandwidth, latency",
                         path);
    goto out;
  }
  for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top;
       pr++) {
    yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
    yaml_node_t *v = yaml_document_get_node(&doc, pr->value);
    if (!k || k->type != YAML_SCALAR_NODE || !v) continue;
    const char *ks = (const char *)k->data.scalar.value;
    int which = -1;
    for (int i = 0; i < K_N; i++)
      if (strcmp(ks, key_names[i]) == 0) which = i;
    if (which < 0) {
      etsim_warn("%s:%d: unknown key \"%s\" ignored", path, line_of(k), ks);
      continue;
    }
    if (val[which]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: key \"%s\" given twice", path, line_of(k),
                           ks);
      goto out;
    }
    val[which] = v;
    keyn[which] = k;
  }
  yaml_node_t *it[K_N][ETSIM_TOPO_MAX_DIMS];
  int n[K_N];
  for (int i = 0; i < K_N; i++) {
    if (!val[i]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: missing key \"%s\"", path, key_names[i]);
      goto out;
    }
    if ((rc = items(&doc, val[i], path, key_names[i], it[i], &n[i], err))) goto out;
    if (n[i] != n[0]) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%d: \"%s\" has %d entries but \"topology\" has %d", path,
                           line_of(keyn[i]), key_names[i], n[i], n[0]);
      goto out;
    }
  }
  etsim_topo_kind_t kind[ETSIM_TOPO_MAX_DIMS];
  uint32_t npus[ETSIM_TOPO_MAX_DIMS];
  double bw[ETSIM_TOPO_MAX_DIMS], lat[ETSIM_TOPO_MAX_DIMS];
  for (int d = 0; d < n[0]; d++) {
    const char *s = (const char *)it[K_TOPO][d]->data.scalar.value;
    if (etsim_topo_kind_parse(s, &kind[d])) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%d: topology[%d]: unknown topology \"%s\" "
                           "(expected Ring, FullyConnected or Switch)",
                           path, line_of(it[K_TOPO][d]), d, s);
      goto out;
    }
    double x = 0;
    if ((rc = number(it[K_NPUS][d], path, "npus_count", d, 1, &x, err))) goto out;
    npus[d] = (uint32_t)x;
    if ((rc = number(it[K_BW][d], path, "bandwidth", d, 0, &bw[d], err))) goto out;
    if ((rc = number(it[K_LAT][d], path, "latency", d, 0, &lat[d], err))) goto out;
  }
  rc = etsim_topo_init(t, n[0], kind, npus, bw, lat, path, err);
out:
  yaml_document_delete(&doc);
  yaml_parser_delete(&p);
  etsim_free(text);
  return rc;
}

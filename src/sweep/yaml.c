/* YAML in and out for sweeps, through libyaml's document API.
 *
 * A spec and an ASTRA-sim network file are read into a JSON tree (jansson),
 * so that every later step — expanding axes, editing a config, writing a
 * row — handles one kind of value.  Plain scalars are typed the way a
 * reader expects (8 an integer, 2.5 a real, true a boolean, ~ null); quoted
 * ones stay strings.  Each node's line is kept for error messages.
 */
#include "sweep/sweep_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64

static int remember(sweep_lines_t *l, const json_t *node, int line) {
  if (!l) return 0;
  if (etsim_grow((void **)&l->node, &l->cap, l->n + 1, sizeof *l->node)) return ETSIM_ENOMEM;
  size_t cap = l->cap;
  /* both arrays share the capacity */
  int *nl = etsim_realloc(l->line, cap * sizeof *nl);
  if (!nl) return ETSIM_ENOMEM;
  l->line = nl;
  l->node[l->n] = node;
  l->line[l->n++] = line;
  return 0;
}

int etsim_sweep__line(const sweep_lines_t *l, const json_t *node) {
  if (!l) return 0;
  for (size_t i = 0; i < l->n; i++)
    if (l->node[i] == node) return l->line[i];
  return 0;
}

void etsim_sweep__lines_free(sweep_lines_t *l) {
  if (!l) return;
  etsim_free(l->node);
  etsim_free(l->line);
  memset(l, 0, sizeof *l);
}

/* A plain scalar as the value it reads as. */
static json_t *plain_scalar(const char *s, size_t len) {
  if (len == 0 || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
    return json_null();
  if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return json_true();
  if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return json_false();
  const char *d = (*s == '-' || *s == '+') ? s + 1 : s;
  if (*d >= '0' && *d <= '9') {
    int integer = 1;
    for (const char *p = d; *p; p++)
      if (*p < '0' || *p > '9') integer = 0;
    /* 010 stays decimal ten, as everywhere in etsim */
    if (integer) {
      errno = 0;
      char *end;
      long long v = strtoll(s, &end, 10);
      if (!errno && !*end) return json_integer(v);
    }
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (!errno && !*end && isfinite(v)) return json_real(v);
  } else if (*d == '.' && d[1] >= '0' && d[1] <= '9') {
    char *end;
    double v = strtod(s, &end);
    if (!*end && isfinite(v)) return json_real(v);
  }
  return json_stringn(s, len);
}

static int convert(yaml_document_t *doc, yaml_node_t *n, int depth, const char *path, json_t **out,
                   sweep_lines_t *lines, etsim_error_t *err) {
  int line = (int)n->start_mark.line + 1;
  if (depth > MAX_DEPTH)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: nested deeper than %d levels", path, line,
                           MAX_DEPTH);
  json_t *v = NULL;
  switch (n->type) {
    case YAML_SCALAR_NODE: {
      const char *s = (const char *)n->data.scalar.value;
      size_t len = n->data.scalar.length;
      if (strlen(s) != len)
        return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: a scalar holds a NUL byte", path, line);
      v = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s, len)
                                                          : json_stringn(s, len);
      break;
    }
    case YAML_SEQUENCE_NODE:
      v = json_array();
      for (yaml_node_item_t *it = n->data.sequence.items.start;
           v && it < n->data.sequence.items.top; it++) {
        yaml_node_t *x = yaml_document_get_node(doc, *it);
        json_t *c;
        int rc = x ? convert(doc, x, depth + 1, path, &c, lines, err) : ETSIM_EFORMAT;
        if (rc) {
          json_decref(v);
          return rc;
        }
        if (json_array_append_new(v, c)) {
          json_decref(v);
          return ETSIM_ENOMEM;
        }
      }
      break;
    case YAML_MAPPING_NODE:
      v = json_object();
      for (yaml_node_pair_t *p = n->data.mapping.pairs.start; v && p < n->data.mapping.pairs.top;
           p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *x = yaml_document_get_node(doc, p->value);
        if (!k || !x || k->type != YAML_SCALAR_NODE) {
          json_decref(v);
          return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: mapping keys must be scalars", path,
                                 k ? (int)k->start_mark.line + 1 : line);
        }
        const char *key = (const char *)k->data.scalar.value;
        if (json_object_get(v, key)) {
          int kl = (int)k->start_mark.line + 1;
          json_decref(v);
          return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: key '%s' given twice", path, kl, key);
        }
        json_t *c;
        int rc = convert(doc, x, depth + 1, path, &c, lines, err);
        if (rc) {
          json_decref(v);
          return rc;
        }
        if (json_object_set_new(v, key, c)) {
          json_decref(v);
          return ETSIM_ENOMEM;
        }
      }
      break;
    default:
      return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d: empty node", path, line);
  }
  if (!v) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  if (remember(lines, v, line)) {
    json_decref(v);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  }
  *out = v;
  return 0;
}

int etsim_sweep__yaml_load(const char *path, json_t **out, sweep_lines_t *lines,
                           etsim_error_t *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return etsim_error_set(err, ETSIM_EIO, "%s: %s", path, strerror(errno));
  yaml_parser_t p;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&p)) {
    fclose(f);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: cannot initialise the YAML parser", path);
  }
  yaml_parser_set_input_file(&p, f);
  int rc = 0;
  if (!yaml_parser_load(&p, &doc)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: %s", path, (int)p.problem_mark.line + 1,
                         (int)p.problem_mark.column + 1,
                         p.problem ? p.problem : "YAML syntax error");
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
  }
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root) rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: the file is empty", path);
  else rc = convert(&doc, root, 0, path, out, lines, err);
  yaml_document_delete(&doc);
  yaml_parser_delete(&p);
  fclose(f);
  return rc;
}

/* A scalar in YAML flow style: JSON's text is valid YAML for numbers,
 * booleans, null and double-quoted strings. */
static int put_scalar(FILE *f, const json_t *v) {
  char *s = etsim_sweep__dump(v);
  if (!s) return ETSIM_ENOMEM;
  fputs(s, f);
  etsim_free(s);
  return 0;
}

int etsim_sweep__yaml_write(const char *path, const json_t *obj, etsim_error_t *err) {
  if (!json_is_object(obj)) return etsim_error_set(err, ETSIM_EINVAL, "%s: not a mapping", path);
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *f = o.fp;
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    json_t *ks = json_string(key);
    if (!ks) rc = ETSIM_ENOMEM;
    if (!rc) rc = put_scalar(f, ks);
    json_decref(ks);
    if (rc) break;
    fputs(": ", f);
    if (json_is_array(v)) {
      fputc('[', f);
      size_t i;
      json_t *x;
      json_array_foreach(v, i, x) {
        if (json_is_object(x) || json_is_array(x)) {
          rc = etsim_error_set(err, ETSIM_EINVAL, "%s: %s[%zu]: nested values are not written",
                               path, key, i);
          break;
        }
        if (i) fputs(", ", f);
        if ((rc = put_scalar(f, x))) break;
      }
      fputc(']', f);
    } else if (json_is_object(v)) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: %s: nested mappings are not written", path, key);
    } else {
      rc = put_scalar(f, v);
    }
    if (rc) break;
    fputc('\n', f);
  }
  if (rc) {
    etsim_outfile_abort(&o);
    if (rc == ETSIM_ENOMEM) etsim_error_set(err, rc, "%s: out of memory", path);
    return rc;
  }
  return etsim_outfile_commit(&o, err);
}

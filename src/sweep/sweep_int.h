/* The sweep module's private furniture: the expanded spec, the YAML
 * reader that turns a spec into a JSON tree, the expression evaluator of
 * derived keys and filters, and the names of the result columns. */
#ifndef ETSIM_SWEEP_INT_H
#define ETSIM_SWEEP_INT_H

#include "etsim/sweep.h"

#include <jansson.h>
#include <stdio.h>

/* What a column's key edits. */
typedef enum {
  SWEEP_DOM_GEN = 0, /* a generator flag: gen.tp */
  SWEEP_DOM_NETWORK, /* a key of the network YAML: network.bandwidth[1] */
  SWEEP_DOM_SYSTEM,  /* a key of the system JSON */
  SWEEP_DOM_MEMORY,  /* a key of the remote-memory JSON */
  SWEEP_DOM_SIM,     /* a simulator option: sim.backend, backend, cc */
  SWEEP_DOM_NETSIM,  /* a netsim option or config key: netsim.CC_MODE */
  SWEEP_DOM_VAR      /* a name only expressions read (vars.N, or a derived
                        name without a domain) */
} sweep_dom_t;

typedef enum { SWEEP_KIND_SIM = 0, SWEEP_KIND_NETSIM = 1 } sweep_kind_t;

typedef struct sweep_key {
  char *name;  /* as written in the spec */
  int dom;     /* sweep_dom_t */
  char *field; /* the key inside its domain ("bandwidth", "tp") */
  int index;   /* [i] of a list, or -1 for the whole value */
  char *expr;  /* derived keys: the expression; NULL for axes */
} sweep_key_t;

struct etsim_sweep_spec {
  char *path, *dir; /* the spec file and its folder */
  int kind;         /* sweep_kind_t */
  /* base run: generator (kind and flags) or a workload */
  char *gen_kind;    /* "llm", "micro", "dlrm" or NULL */
  json_t *gen_flags; /* object flag -> value, in the order written */
  char *workload, *comm_group;
  char *network, *system, *memory; /* resolved paths (NULL: none) */
  json_t *net_tree, *sys_tree, *mem_tree;
  json_t *sim_opts; /* object: simulator options */
  char *netsim_cfg; /* netsim: the config file */
  json_t *netsim_opts;
  char *where;
  /* columns: axis keys, then derived keys */
  size_t n_cols, n_axis;
  sweep_key_t *cols;
  /* points: n_points x n_cols values (compact JSON), ids, groups */
  size_t n_points;
  char **vals;
  char (*ids)[17];
  size_t *group, n_groups;
  uint64_t fingerprint;
  double timeout_s;
  int keep_traces;
  int n_dims; /* network dimensions reported (the most any point has) */
};

/* ------------------------------------------------------------- yaml.c */

/* Read a YAML file into a JSON tree (plain scalars that read as integers,
 * reals, true/false or null become those; everything else strings).
 * *lines maps nodes to their 1-based line for messages (free with
 * sweep_lines_free). */
typedef struct sweep_lines {
  const json_t **node;
  int *line;
  size_t n, cap;
} sweep_lines_t;

int etsim_sweep__yaml_load(const char *path, json_t **out, sweep_lines_t *lines,
                           etsim_error_t *err);
int etsim_sweep__line(const sweep_lines_t *l, const json_t *node);
void etsim_sweep__lines_free(sweep_lines_t *l);
/* Write a flat mapping of scalars and lists as YAML, one key a line. */
int etsim_sweep__yaml_write(const char *path, const json_t *obj, etsim_error_t *err);

/* ------------------------------------------------------------- expr.c */

typedef struct sweep_val {
  int is_str;
  double num;
  const char *str;
} sweep_val_t;

/* Look a name up: 0 and *out, or ETSIM_ENOTFOUND. */
typedef int (*sweep_lookup_fn)(void *user, const char *name, size_t len, sweep_val_t *out);

/* Evaluate `expr` (arithmetic + - * / % **, comparisons, && || !,
 * parentheses, min max floor ceil round abs log2 sqrt; names of keys).
 * Errors name `what` and the offset in the expression. */
int etsim_sweep__expr_eval(const char *expr, sweep_lookup_fn lookup, void *user, const char *what,
                           sweep_val_t *out, etsim_error_t *err);

/* ------------------------------------------------------------ spec.c */

/* A value's JSON text as a scalar for a command line or a CSV cell:
 * strings without quotes, everything else as JSON. */
char *etsim_sweep__scalar_text(const json_t *v);
/* Canonical compact JSON of a value (owned). */
char *etsim_sweep__dump(const json_t *v);
/* The point's value of column c, parsed (new reference). */
json_t *etsim_sweep__value_json(const etsim_sweep_spec_t *s, size_t point, size_t col);
/* Known flags of `etsim gen KIND` (NULL-terminated), boolean ones marked. */
int etsim_sweep__gen_flag_known(const char *kind, const char *flag, int *is_bool);
/* The generator flags of a point (base merged with its gen.* values):
 * a new object. */
json_t *etsim_sweep__gen_flags(const etsim_sweep_spec_t *s, size_t point);
/* "llm --preset x --tp 8 ..." with flags sorted: the trace set's identity. */
char *etsim_sweep__gen_canon(const char *kind, const json_t *flags);

/* ----------------------------------------------------------- point.c */

/* The result columns of the spec's kind, in row order. */
size_t etsim_sweep__result_names(const etsim_sweep_spec_t *s, const char ***out);
void etsim_sweep__result_names_free(const char **names, size_t n);

/* mkdir -p; rm -r (of what executors and generators write). */
int etsim_sweep__mkdirs(const char *path, etsim_error_t *err);
void etsim_sweep__remove_tree(const char *path);

/* ---------------------------------------------------------- results.c */

/* Append a CSV field (quoted when it must be) to f. */
void etsim_sweep__csv_field(FILE *f, const char *s);
/* A row as one CSV line (no newline) in the header's column order. */
char *etsim_sweep__row_csv(const etsim_sweep_spec_t *s, const char *row);
/* The CSV header (no newline). */
char *etsim_sweep__csv_header(const etsim_sweep_spec_t *s);

#endif

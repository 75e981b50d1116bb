/*
 * ops.c — the operations an edit is made of: their table (what the CLI
 * offers and prints as help), and the parsing of their arguments,
 * including node predicates:
 *
 *   PRED  := [ancestors: | descendants: | lineage:] TERM {';' TERM}
 *   TERM  := name=ERE | type=T[,T] | id=A-B | coll=C[,C] | cpu=0|1
 *          | attr=NAME | all
 *
 * `name=` takes the rest of the predicate (a regular expression may hold
 * ';'), so it comes last.  Everything is checked here, before any file is
 * read, and errors name the operation and what was expected.
 */
#include "edit_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The table: the CLI's options and help come from it.  Order = help order;
 * the index is the ed_kind_t. */
static const etsim_edit_op_info_t op_info[ED_KIND_COUNT] = {
    [ED_KEEP] = {"keep", "PRED",
                 "keep only the nodes matching PRED (see predicates);\n"
                 "ancestors:PRED, descendants:PRED, lineage:PRED add their closure",
                 ETSIM_EDIT_GROUP_SELECT},
    [ED_DROP] = {"drop", "PRED", "drop the nodes matching PRED (closures as for --keep)",
                 ETSIM_EDIT_GROUP_SELECT},
    [ED_IDS] = {"ids", "A-B",
                "keep the nodes with ids A..B (\"A-\": to the end); records\n"
                "the dependencies it cuts so --concat can restore them",
                ETSIM_EDIT_GROUP_SELECT},
    [ED_ITER] = {"iter", "N[-M]",
                 "keep iterations N..M (from 0), found by the iteration\n"
                 "markers or else by repeating structure, and the nodes outside\n"
                 "every iteration (set-up such as process groups); records the\n"
                 "dependencies it cuts",
                 ETSIM_EDIT_GROUP_SELECT},
    [ED_ITER_ONLY] = {"iter-only", "N[-M]", "as --iter, without the nodes outside iterations",
                      ETSIM_EDIT_GROUP_SELECT},
    [ED_RANKS] = {"ranks", "LIST",
                  "keep ranks LIST (\"0-3,8\") of a set, renumbered in order;\n"
                  "communicators shrink to the kept ranks, sends and receives\n"
                  "to dropped ranks are dropped",
                  ETSIM_EDIT_GROUP_SELECT},
    [ED_KEEP_DEPS] = {"keep-deps", "data|ctrl",
                      "keep only data (feeder v1's view) or only control\n"
                      "dependencies; the other kind is dropped, not bridged",
                      ETSIM_EDIT_GROUP_SELECT},
    [ED_SCALE_TIME] = {"scale-time", "F[@PRED]", "multiply durations by F (default: COMP nodes)",
                       ETSIM_EDIT_GROUP_SCALE},
    [ED_SCALE_FLOPS] = {"scale-flops", "F[@PRED]", "multiply num_ops by F (default: COMP nodes)",
                        ETSIM_EDIT_GROUP_SCALE},
    [ED_SCALE_TENSOR] = {"scale-tensor", "F[@PRED]",
                         "multiply tensor_size by F (default: every node)", ETSIM_EDIT_GROUP_SCALE},
    [ED_SCALE_COMM] = {"scale-comm", "F[@PRED]",
                       "multiply comm_size by F (default: collectives, sends,\n"
                       "receives; 0.5 for fp32 -> bf16)",
                       ETSIM_EDIT_GROUP_SCALE},
    [ED_PROFILE] = {"profile", "CSV",
                    "set durations from a profile: lines NAME,TIME (TIME in us,\n"
                    "or in the unit a header names: ns, us, ms)",
                    ETSIM_EDIT_GROUP_SCALE},
    [ED_DP] = {"dp", "N",
               "change the data-parallel degree to N: replicas are inferred\n"
               "from the communicators; groups, sizes and rank files re-derived",
               ETSIM_EDIT_GROUP_RETARGET},
    [ED_NPUS] = {"npus", "N", "change the NPU count to N (N / model-parallel ranks replicas)",
                 ETSIM_EDIT_GROUP_RETARGET},
    [ED_REMAP] = {"remap-ranks", "MAP",
                  "new rank i runs old rank MAP[i] (\"3,2,1,0\", or a file with\n"
                  "one rank a line); peers and groups follow",
                  ETSIM_EDIT_GROUP_RETARGET},
    [ED_CONCAT] = {"concat", "TRACE",
                   "append TRACE (a file or set) rank by rank: it runs after\n"
                   "what is there (cut dependencies restored when recorded)",
                   ETSIM_EDIT_GROUP_COMPOSE},
    [ED_REPEAT] = {"repeat", "N", "run what is there N times in a row", ETSIM_EDIT_GROUP_COMPOSE},
    [ED_BESIDE] = {"beside", "TRACE", "add TRACE's ranks after these, as an independent job",
                   ETSIM_EDIT_GROUP_COMPOSE},
    [ED_INSERT_BEFORE] = {"insert-before", "NODE@PRED",
                          "insert NODE before each node matching PRED; NODE is\n"
                          "comp:TIME[:name=S] or COLL:SIZE[:pg=G][:name=S]",
                          ETSIM_EDIT_GROUP_COMPOSE},
    [ED_INSERT_AFTER] = {"insert-after", "NODE@PRED", "insert NODE after each node matching PRED",
                         ETSIM_EDIT_GROUP_COMPOSE},
    [ED_ANONYMIZE] = {"anonymize", "hash|strip",
                      "replace node names, string attributes and metadata strings\n"
                      "by keyed hashes (--salt) or empty strings; pg_name is kept",
                      ETSIM_EDIT_GROUP_OBFUSCATE},
    [ED_ROUND_SIZES] = {"round-sizes", "pow2|SIZE",
                        "round comm_size, tensor_size and num_ops up to a power\n"
                        "of two or a multiple of SIZE",
                        ETSIM_EDIT_GROUP_OBFUSCATE},
    [ED_ROUND_TIMES] = {"round-times", "pow2|TIME",
                        "round durations up to a power of two (us) or a multiple\n"
                        "of TIME (\"10us\")",
                        ETSIM_EDIT_GROUP_OBFUSCATE},
    [ED_STRIP_ATTRS] = {"strip-attrs", "sim[,NAME...]",
                        "drop what simulation does not read: other attributes,\n"
                        "inputs/outputs (but process-group definitions), metadata\n"
                        "attributes; NAME... are kept too",
                        ETSIM_EDIT_GROUP_OBFUSCATE},
};

const etsim_edit_op_info_t *etsim_edit_ops(size_t *n) {
  *n = ED_KIND_COUNT;
  return op_info;
}

int etsim_edit__kind_is_content(int kind) {
  switch (kind) {
    case ED_SCALE_TIME:
    case ED_SCALE_FLOPS:
    case ED_SCALE_TENSOR:
    case ED_SCALE_COMM:
    case ED_PROFILE:
    case ED_ANONYMIZE:
    case ED_ROUND_SIZES:
    case ED_ROUND_TIMES:
    case ED_STRIP_ATTRS:
      return 1;
    default:
      return 0;
  }
}

int etsim_edit__kind_is_rank(int kind) {
  switch (kind) {
    case ED_RANKS:
    case ED_DP:
    case ED_NPUS:
    case ED_REMAP:
    case ED_CONCAT:
    case ED_REPEAT:
    case ED_BESIDE:
      return 1;
    default:
      return 0;
  }
}

/* -------------------------------------------------------------- numbers */

static int parse_u64(const char *s, const char *end, uint64_t *out) {
  if (s == end || !isdigit((unsigned char)*s)) return -1;
  uint64_t v = 0;
  for (; s < end; s++) {
    if (!isdigit((unsigned char)*s)) return -1;
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

int etsim_edit__parse_range(const char *s, uint64_t *lo, uint64_t *hi) {
  const char *dash = strchr(s, '-');
  const char *end = s + strlen(s);
  if (!dash) {
    if (parse_u64(s, end, lo)) return ETSIM_EINVAL;
    *hi = *lo;
    return 0;
  }
  if (parse_u64(s, dash, lo)) return ETSIM_EINVAL;
  if (dash + 1 == end) {
    *hi = UINT64_MAX;
    return 0;
  }
  if (parse_u64(dash + 1, end, hi) || *hi < *lo) return ETSIM_EINVAL;
  return 0;
}

int etsim_edit__parse_ranks(const char *s, uint32_t **out, size_t *n, const char *what,
                            etsim_error_t *err) {
  uint32_t *v = NULL;
  size_t cnt = 0, cap = 0;
  const char *p = s;
  if (!*p) goto bad;
  while (*p) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    char buf[64];
    if ((size_t)(end - p) >= sizeof buf) goto bad;
    memcpy(buf, p, (size_t)(end - p));
    buf[end - p] = 0;
    uint64_t lo, hi;
    if (etsim_edit__parse_range(buf, &lo, &hi) || hi == UINT64_MAX || hi >= ETSIM_ET_MAX_RANKS)
      goto bad;
    for (uint64_t r = lo; r <= hi; r++) {
      if (etsim_grow((void **)&v, &cap, cnt + 1, sizeof *v)) {
        etsim_free(v);
        return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      }
      v[cnt++] = (uint32_t)r;
    }
    p = comma ? comma + 1 : end;
    if (comma && !*p) goto bad;
  }
  *out = v;
  *n = cnt;
  return 0;
bad:
  etsim_free(v);
  return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not a list of ranks like \"0-3,8\"", what,
                         s);
}

/* "50us", "2ms", "300ns", "1.5s", "7" (us): ns in *out. */
static int parse_time_ns(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !isfinite(v) || v < 0) return -1;
  double mult = 1000.0;
  if (!*end || strcmp(end, "us") == 0) mult = 1000.0;
  else if (strcmp(end, "ns") == 0) mult = 1.0;
  else if (strcmp(end, "ms") == 0) mult = 1e6;
  else if (strcmp(end, "s") == 0) mult = 1e9;
  else return -1;
  double ns = v * mult;
  if (ns > 9.2e18) return -1;
  *out = (uint64_t)llround(ns);
  return 0;
}

/* ----------------------------------------------------------- predicates */

/* Node types by the names people use: COMP_NODE, COMP, comp; coll, send,
 * recv, meta, load, store; comm and mem name two or three at once. */
static unsigned type_bits(const char *s, size_t n) {
  char b[32];
  if (n >= sizeof b) return 0;
  for (size_t i = 0; i < n; i++) b[i] = (char)toupper((unsigned char)s[i]);
  b[n] = 0;
  static const struct {
    const char *name;
    unsigned bits;
  } alias[] = {
      {"COMM", (1u << ETSIM_ET_COMM_COLL_NODE) | (1u << ETSIM_ET_COMM_SEND_NODE) |
                   (1u << ETSIM_ET_COMM_RECV_NODE)},
      {"MEM", (1u << ETSIM_ET_MEM_LOAD_NODE) | (1u << ETSIM_ET_MEM_STORE_NODE)},
      {"COLL", 1u << ETSIM_ET_COMM_COLL_NODE},
      {"SEND", 1u << ETSIM_ET_COMM_SEND_NODE},
      {"RECV", 1u << ETSIM_ET_COMM_RECV_NODE},
      {"META", 1u << ETSIM_ET_METADATA_NODE},
      {"LOAD", 1u << ETSIM_ET_MEM_LOAD_NODE},
      {"STORE", 1u << ETSIM_ET_MEM_STORE_NODE},
  };
  for (size_t k = 0; k < sizeof alias / sizeof alias[0]; k++)
    if (strcmp(b, alias[k].name) == 0) return alias[k].bits;
  for (int t = 0; t < ETSIM_ET_NODE_TYPE_COUNT; t++) {
    const char *full = etsim_et_node_type_name(t);
    size_t fl = strlen(full);
    if (strcmp(b, full) == 0) return 1u << t;
    /* without the "_NODE" suffix */
    if (fl > 5 && n == fl - 5 && strncmp(b, full, n) == 0) return 1u << t;
  }
  return 0;
}

/* A collective by any common spelling: all-reduce, all_reduce, allreduce,
 * ALL_REDUCE.  -1 when unknown. */
static int coll_parse(const char *s, size_t n) {
  char b[40];
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '-' || s[i] == '_') continue;
    if (m + 1 >= sizeof b) return -1;
    b[m++] = (char)toupper((unsigned char)s[i]);
  }
  b[m] = 0;
  for (int c = 0; c < ETSIM_COLL_TYPE_COUNT; c++) {
    const char *nm = etsim_coll_type_name(c);
    size_t w = 0, i = 0;
    for (; nm[i]; i++) {
      if (nm[i] == '_') continue;
      if (b[w] != nm[i]) break;
      w++;
    }
    if (!nm[i] && !b[w]) return c;
  }
  return -1;
}

static unsigned coll_bits(const char *s, size_t n) {
  int c = coll_parse(s, n);
  return c >= 0 ? 1u << c : 0;
}

/* A comma-separated list through `one`; 0 when some entry is unknown. */
static unsigned list_bits(const char *s, const char *end, unsigned (*one)(const char *, size_t)) {
  unsigned all = 0;
  while (s < end) {
    const char *c = memchr(s, ',', (size_t)(end - s));
    const char *e = c ? c : end;
    unsigned b = one(s, (size_t)(e - s));
    if (!b) return 0;
    all |= b;
    s = c ? c + 1 : end;
  }
  return all;
}

void etsim_edit__pred_free(ed_pred_t *p) {
  if (p->has_re) regfree(&p->re);
  etsim_free(p->attr);
  memset(p, 0, sizeof *p);
}

int etsim_edit__pred_parse(ed_pred_t *p, const char *s, int allow_closure, const char *what,
                           etsim_error_t *err) {
  memset(p, 0, sizeof *p);
  p->cpu = -1;
  static const struct {
    const char *prefix;
    int closure;
  } closures[] = {{"ancestors:", ED_CLOSE_ANCESTORS},
                  {"descendants:", ED_CLOSE_DESCENDANTS},
                  {"lineage:", ED_CLOSE_BOTH}};
  for (size_t k = 0; k < 3; k++) {
    size_t l = strlen(closures[k].prefix);
    if (strncmp(s, closures[k].prefix, l) == 0) {
      if (!allow_closure)
        return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s': closures belong to --keep and --drop",
                               what, s);
      p->closure = closures[k].closure;
      s += l;
      break;
    }
  }
  if (!*s)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: empty predicate (try all, type=COMP)", what);
  const char *t = s;
  int terms = 0;
  while (*t) {
    const char *semi = strchr(t, ';');
    const char *end = semi ? semi : t + strlen(t);
    const char *eq = memchr(t, '=', (size_t)(end - t));
    size_t kl = eq ? (size_t)(eq - t) : (size_t)(end - t);
    const char *v = eq ? eq + 1 : end;
    terms++;
    if (kl == 4 && strncmp(t, "name", 4) == 0 && eq) {
      /* The regular expression is the rest of the string. */
      if (p->has_re) goto dup;
      int rc = regcomp(&p->re, v, REG_EXTENDED | REG_NOSUB);
      if (rc) {
        char msg[256];
        regerror(rc, &p->re, msg, sizeof msg);
        etsim_edit__pred_free(p);
        return etsim_error_set(err, ETSIM_EINVAL, "%s: name=%s: %s", what, v, msg);
      }
      p->has_re = 1;
      return 0;
    } else if (kl == 3 && strncmp(t, "all", 3) == 0 && !eq) {
      p->any = 1;
    } else if (kl == 4 && strncmp(t, "type", 4) == 0 && eq) {
      if (!(p->types = list_bits(v, end, type_bits))) {
        etsim_edit__pred_free(p);
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: type=%.*s: expected node types such as COMP_NODE, comp, "
                               "coll, send, recv, comm, meta, mem",
                               what, (int)(end - v), v);
      }
    } else if (kl == 4 && strncmp(t, "coll", 4) == 0 && eq) {
      if (!(p->colls = list_bits(v, end, coll_bits))) {
        etsim_edit__pred_free(p);
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: coll=%.*s: expected collectives such as all-reduce, "
                               "ALL_GATHER",
                               what, (int)(end - v), v);
      }
    } else if (kl == 2 && strncmp(t, "id", 2) == 0 && eq) {
      char buf[64];
      size_t vl = (size_t)(end - v);
      if (vl >= sizeof buf) goto bad;
      memcpy(buf, v, vl);
      buf[vl] = 0;
      if (etsim_edit__parse_range(buf, &p->id_lo, &p->id_hi)) goto bad;
      p->has_ids = 1;
    } else if (kl == 3 && strncmp(t, "cpu", 3) == 0 && eq && end - v == 1 &&
               (*v == '0' || *v == '1')) {
      p->cpu = *v - '0';
    } else if (kl == 4 && strncmp(t, "attr", 4) == 0 && eq && end > v) {
      etsim_free(p->attr);
      p->attr = etsim_malloc((size_t)(end - v) + 1);
      if (!p->attr) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      memcpy(p->attr, v, (size_t)(end - v));
      p->attr[end - v] = 0;
    } else {
      goto bad;
    }
    t = semi ? semi + 1 : end;
    if (semi && !*t) goto bad;
  }
  (void)terms;
  return 0;
dup:
bad:
  etsim_edit__pred_free(p);
  return etsim_error_set(err, ETSIM_EINVAL,
                         "%s: '%s' is not a predicate (terms: name=ERE, type=T[,T], id=A-B, "
                         "coll=C[,C], cpu=0|1, attr=NAME, all; joined by ';', name= last)",
                         what, s);
}

/* ------------------------------------------------------------ operations */

void etsim_edit__op_free(ed_op_t *op) {
  etsim_free(op->arg);
  etsim_edit__pred_free(&op->pred);
  etsim_free(op->path);
  etsim_free(op->list);
  etsim_free(op->ins_name);
  etsim_free(op->ins_pg);
  if (op->profile) {
    etsim_intern_free(&op->profile->names);
    etsim_free(op->profile->ns);
    etsim_free(op->profile);
  }
  memset(op, 0, sizeof *op);
}

/* "F[@PRED]" with a default predicate. */
static int parse_scale(ed_op_t *op, const char *arg, const char *what, const char *dflt,
                       etsim_error_t *err) {
  const char *at = strchr(arg, '@');
  size_t fl = at ? (size_t)(at - arg) : strlen(arg);
  char buf[64];
  if (fl == 0 || fl >= sizeof buf) goto bad;
  memcpy(buf, arg, fl);
  buf[fl] = 0;
  char *end;
  errno = 0;
  double f = strtod(buf, &end);
  if (*end || errno || !isfinite(f) || f < 0 || f > 1e12) goto bad;
  op->factor = f;
  return etsim_edit__pred_parse(&op->pred, at ? at + 1 : dflt, 0, what, err);
bad:
  return etsim_error_set(
      err, ETSIM_EINVAL,
      "%s: '%s' is not F[@PRED] with F a non-negative number (e.g. 0.5@type=COMP)", what, arg);
}

/* "comp:TIME[:name=S]" or "COLL:SIZE[:pg=G][:name=S]", then "@PRED". */
static int parse_insert(ed_op_t *op, const char *arg, const char *what, etsim_error_t *err) {
  const char *at = strchr(arg, '@');
  if (!at)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: '%s' has no @PRED saying where (e.g. comp:50us@name=^optimizer)",
                           what, arg);
  size_t nl = (size_t)(at - arg);
  char *spec = etsim_malloc(nl + 1);
  if (!spec) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  memcpy(spec, arg, nl);
  spec[nl] = 0;
  int rc = 0;
  char *save = NULL;
  char *kind = strtok_r(spec, ":", &save);
  char *val = kind ? strtok_r(NULL, ":", &save) : NULL;
  if (!kind || !val) goto bad;
  if (strcasecmp(kind, "comp") == 0) {
    op->ins_type = ETSIM_ET_COMP_NODE;
    if (parse_time_ns(val, &op->ins_value)) goto bad;
  } else {
    int c = coll_parse(kind, strlen(kind));
    if (c < 0) goto bad;
    op->ins_type = ETSIM_ET_COMM_COLL_NODE;
    op->ins_coll = c;
    if (etsim_parse_size(val, &op->ins_value) || op->ins_value == 0 ||
        op->ins_value > (uint64_t)INT64_MAX)
      goto bad;
  }
  for (char *kv; (kv = strtok_r(NULL, ":", &save));) {
    if (strncmp(kv, "name=", 5) == 0) {
      etsim_free(op->ins_name);
      op->ins_name = etsim_strdup(kv + 5);
    } else if (strncmp(kv, "pg=", 3) == 0 && op->ins_type == ETSIM_ET_COMM_COLL_NODE) {
      etsim_free(op->ins_pg);
      op->ins_pg = etsim_strdup(kv + 3);
    } else {
      goto bad;
    }
  }
  if (!op->ins_name) {
    char nm[64];
    if (op->ins_type == ETSIM_ET_COMP_NODE) snprintf(nm, sizeof nm, "inserted_comp");
    else snprintf(nm, sizeof nm, "inserted_%s", etsim_coll_type_name(op->ins_coll));
    op->ins_name = etsim_strdup(nm);
  }
  if (!op->ins_name) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  rc = etsim_edit__pred_parse(&op->pred, at + 1, 0, what, err);
  goto done;
bad:
  rc = etsim_error_set(err, ETSIM_EINVAL,
                       "%s: '%.*s' is not a node to insert: comp:TIME[:name=S] (TIME as 50us, "
                       "2ms) or COLL:SIZE[:pg=G][:name=S] (all-reduce:1MiB)",
                       what, (int)nl, arg);
done:
  etsim_free(spec);
  return rc;
}

int etsim_edit__op_parse(ed_op_t *op, int kind, const char *arg, etsim_error_t *err) {
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->bit = -1;
  op->pred.cpu = -1;
  char what[48];
  snprintf(what, sizeof what, "--%s", op_info[kind].name);
  if (!arg) arg = "";
  if (!(op->arg = etsim_strdup(arg))) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* Names, groups and patterns from here may reach the output, whose
   * strings protobuf and Chakra's readers require to be UTF-8. */
  size_t len = strlen(arg), ok = etsim_utf8_valid(arg, len);
  if (ok != len) {
    etsim_edit__op_free(op);
    return etsim_error_set(err, ETSIM_EINVAL, "%s: the argument is not valid UTF-8 (byte %zu)",
                           what, ok);
  }
  int rc = 0;
  switch (kind) {
    case ED_KEEP:
    case ED_DROP:
      rc = etsim_edit__pred_parse(&op->pred, arg, 1, what, err);
      break;
    case ED_IDS:
      if (etsim_edit__parse_range(arg, &op->lo, &op->hi))
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not an id range like 100-199 or 100-",
                             what, arg);
      op->cut = 1;
      break;
    case ED_ITER:
    case ED_ITER_ONLY:
      if (etsim_edit__parse_range(arg, &op->lo, &op->hi) ||
          (op->hi != UINT64_MAX && op->hi > INT32_MAX))
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not an iteration range like 1 or 0-2",
                             what, arg);
      op->cut = 1;
      break;
    case ED_RANKS:
      rc = etsim_edit__parse_ranks(arg, &op->list, &op->n_list, what, err);
      break;
    case ED_KEEP_DEPS:
      if (strcmp(arg, "data") == 0) op->mode = 0;
      else if (strcmp(arg, "ctrl") == 0) op->mode = 1;
      else rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not data or ctrl", what, arg);
      break;
    case ED_SCALE_TIME:
    case ED_SCALE_FLOPS:
      rc = parse_scale(op, arg, what, "type=COMP", err);
      break;
    case ED_SCALE_TENSOR:
      rc = parse_scale(op, arg, what, "all", err);
      break;
    case ED_SCALE_COMM:
      rc = parse_scale(op, arg, what, "type=comm", err);
      break;
    case ED_PROFILE:
    case ED_CONCAT:
    case ED_BESIDE:
      if (!*arg) rc = etsim_error_set(err, ETSIM_EINVAL, "%s needs a path", what);
      else if (!(op->path = etsim_strdup(arg))) rc = ETSIM_ENOMEM;
      break;
    case ED_DP:
    case ED_NPUS:
    case ED_REPEAT: {
      uint64_t lo, hi;
      if (etsim_edit__parse_range(arg, &lo, &hi) || lo != hi || lo == 0 ||
          lo > ETSIM_ET_MAX_RANKS || (kind == ED_REPEAT && lo > 100000))
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not a positive count", what, arg);
      op->n = lo;
      break;
    }
    case ED_REMAP:
      if (!*arg) rc = etsim_error_set(err, ETSIM_EINVAL, "%s needs a rank list or a file", what);
      else if (!(op->path = etsim_strdup(arg))) rc = ETSIM_ENOMEM;
      break;
    case ED_INSERT_BEFORE:
    case ED_INSERT_AFTER:
      rc = parse_insert(op, arg, what, err);
      break;
    case ED_ANONYMIZE:
      if (!*arg || strcmp(arg, "hash") == 0) op->mode = ED_ANON_HASH;
      else if (strcmp(arg, "strip") == 0) op->mode = ED_ANON_STRIP;
      else rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not hash or strip", what, arg);
      break;
    case ED_ROUND_SIZES:
      if (strcmp(arg, "pow2") == 0) op->mode = ED_ROUND_POW2;
      else if (!etsim_parse_size(arg, &op->bucket) && op->bucket > 0) op->mode = ED_ROUND_MULTIPLE;
      else
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not pow2 or a size (4KiB)", what, arg);
      /* Sizes are int64: a bigger bucket would round every value past the
       * largest one, and each would be left as it was without a word. */
      if (!rc && op->mode == ED_ROUND_MULTIPLE && op->bucket > (uint64_t)INT64_MAX)
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is above the largest size, %" PRId64,
                             what, arg, INT64_MAX);
      break;
    case ED_ROUND_TIMES:
      if (strcmp(arg, "pow2") == 0) op->mode = ED_ROUND_POW2;
      else if (!parse_time_ns(arg, &op->bucket) && op->bucket > 0) op->mode = ED_ROUND_MULTIPLE;
      else
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' is not pow2 or a time (10us, 1ms)", what,
                             arg);
      break;
    case ED_STRIP_ATTRS:
      if (strncmp(arg, "sim", 3) != 0 || (arg[3] && arg[3] != ','))
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: '%s': the argument is sim, or sim,NAME,... to keep more", what,
                             arg);
      break;
    default:
      rc = etsim_error_set(err, ETSIM_EINTERNAL, "unknown edit operation %d", kind);
  }
  if (rc == ETSIM_ENOMEM) etsim_error_set(err, rc, "out of memory");
  if (rc) etsim_edit__op_free(op);
  return rc;
}

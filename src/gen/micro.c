/*
 * micro.c — collective microbenchmarks, as ASTRA-sim's example scripts
 * (examples/workload/microbenchmarks/generator_scripts) write them.
 *
 * Per rank: `count` repetitions of the collective list, each collective
 * optionally preceded by a COMP node of `comp_ns`, all in one dependency
 * chain.  A lone collective is exactly ASTRA-sim's file: GlobalMetadata
 * version "0.0.4", one COMM_COLL_NODE named `<coll>_<N>npus_<size>` with
 * is_cpu_op (bool), comm_type (int64), comm_size (int64).  Their scripts
 * number nodes with one counter across all rank files (rank r's node has id
 * r); ETSIM_GEN_IDS_CONTINUE reproduces that, RESTART gives every rank the
 * same ids so identical ranks can share a file.  Send/receive rings pair
 * rank r's send to r+1 with r+1's receive from r, tagged by position.
 * Rooted collectives carry comm_root (etsim's attribute) when a root is
 * given; `etsim sim` runs them through the network with the system key
 * "rooted-collectives": "network".
 */
#include "gen_int.h"

#include <ctype.h>

int etsim_gen_coll_parse(const char *s) {
  char buf[64];
  size_t n = 0;
  for (; *s && n + 1 < sizeof buf; s++)
    if (*s != '-' && *s != '_') buf[n++] = (char)tolower((unsigned char)*s);
  buf[n] = 0;
  static const struct {
    const char *name;
    int coll;
  } tab[] = {
      {"allreduce", ETSIM_COLL_ALL_REDUCE},
      {"reduce", ETSIM_COLL_REDUCE},
      {"allgather", ETSIM_COLL_ALL_GATHER},
      {"gather", ETSIM_COLL_GATHER},
      {"scatter", ETSIM_COLL_SCATTER},
      {"broadcast", ETSIM_COLL_BROADCAST},
      {"alltoall", ETSIM_COLL_ALL_TO_ALL},
      {"reducescatter", ETSIM_COLL_REDUCE_SCATTER},
      {"reducescatterblock", ETSIM_COLL_REDUCE_SCATTER_BLOCK},
      {"barrier", ETSIM_COLL_BARRIER},
      {"sendrecv", ETSIM_GEN_SEND_RECV},
  };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(buf, tab[i].name) == 0) return tab[i].coll;
  return -2;
}

/* "1MB" for whole MiB (ASTRA-sim's folder and node names), "64KB", "100B". */
static void size_label(uint64_t b, char *out, size_t n) {
  if (b && b % (1024 * 1024) == 0) snprintf(out, n, "%lluMB", (unsigned long long)(b >> 20));
  else if (b && b % 1024 == 0) snprintf(out, n, "%lluKB", (unsigned long long)(b >> 10));
  else snprintf(out, n, "%lluB", (unsigned long long)b);
}

/* Nodes per rank: one per collective (two for a send/recv pair), plus one
 * COMP before each when comp_ns > 0. */
static uint64_t nodes_per_rank(const etsim_gen_micro_opts_t *o, size_t count) {
  uint64_t n = 0;
  for (size_t c = 0; c < o->n_colls; c++)
    n += (o->colls[c] == ETSIM_GEN_SEND_RECV ? 2 : 1) + (o->comp_ns ? 1 : 0);
  return n * count;
}

static int has_ring(const etsim_gen_micro_opts_t *o) {
  for (size_t c = 0; c < o->n_colls; c++)
    if (o->colls[c] == ETSIM_GEN_SEND_RECV) return 1;
  return 0;
}

static int build_rank(const etsim_gen_micro_opts_t *o, size_t rank, uint64_t first_id, size_t count,
                      etsim_et_buf_t *buf, etsim_error_t *err) {
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  int rc = etsim_et_enc_meta(buf, &meta, err);
  if (rc) return rc;
  char lbl[32];
  size_label(o->size_bytes, lbl, sizeof lbl);
  size_t total = count * o->n_colls;
  uint64_t id = first_id, prev[2];
  size_t n_prev = 0;
  etsim_et_nb_t *b = etsim_malloc(sizeof *b);
  if (!b) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  char name[256];
  for (size_t k = 0; k < count; k++)
    for (size_t c = 0; c < o->n_colls; c++) {
      size_t pos = k * o->n_colls + c;
      int coll = o->colls[c];
      char cname[32];
      gen_coll_lower(coll, cname, sizeof cname);
      int len = snprintf(name, sizeof name, "%s_%zunpus_%s", cname, o->npus, lbl);
      if (total > 1) snprintf(name + len, sizeof name - (size_t)len, "_%zu", pos);
      if (o->comp_ns) {
        char cn[64];
        snprintf(cn, sizeof cn, "compute_%zu", pos);
        etsim_et_nb_start(b, id, ETSIM_ET_COMP_NODE, cn);
        etsim_et_nb_bool(b, "is_cpu_op", 0);
        etsim_et_nb_time_ns(b, o->comp_ns);
        for (size_t i = 0; i < n_prev; i++) etsim_et_nb_dep(b, prev[i]);
        if ((rc = etsim_et_enc_node(buf, &b->n, err))) goto done;
        prev[0] = id++;
        n_prev = 1;
      }
      if (coll == ETSIM_GEN_SEND_RECV) {
        int32_t me = (int32_t)rank, n = (int32_t)o->npus;
        for (int side = 0; side < 2; side++) {
          char pn[300];
          snprintf(pn, sizeof pn, "%s_%s", name, side ? "recv" : "send");
          etsim_et_nb_start(b, id, side ? ETSIM_ET_COMM_RECV_NODE : ETSIM_ET_COMM_SEND_NODE, pn);
          etsim_et_nb_bool(b, "is_cpu_op", 0);
          etsim_et_nb_i32(b, "comm_src", side ? (me + n - 1) % n : me);
          etsim_et_nb_i32(b, "comm_dst", side ? me : (me + 1) % n);
          etsim_et_nb_i32(b, "comm_tag", (int32_t)pos);
          etsim_et_nb_i64(b, "comm_size", (int64_t)o->size_bytes);
          for (size_t i = 0; i < n_prev; i++) etsim_et_nb_dep(b, prev[i]);
          if ((rc = etsim_et_enc_node(buf, &b->n, err))) goto done;
          id++;
        }
        prev[0] = id - 2;
        prev[1] = id - 1;
        n_prev = 2;
        continue;
      }
      etsim_et_nb_start(b, id, ETSIM_ET_COMM_COLL_NODE, name);
      etsim_et_nb_bool(b, "is_cpu_op", 0);
      etsim_et_nb_i64(b, "comm_type", coll);
      etsim_et_nb_i64(b, "comm_size", (int64_t)o->size_bytes);
      if (o->has_root && (coll == ETSIM_COLL_BROADCAST || coll == ETSIM_COLL_REDUCE ||
                          coll == ETSIM_COLL_GATHER || coll == ETSIM_COLL_SCATTER))
        etsim_et_nb_i32(b, "comm_root", (int32_t)o->root);
      if (o->n_dims) {
        etsim_attr_t *a = etsim_et_nb_attr(b, "involved_dim", ETSIM_ATTR_BOOL_LIST);
        a->v.list.n = o->n_dims;
        a->v.list.v = o->dims;
      }
      for (size_t i = 0; i < n_prev; i++) etsim_et_nb_dep(b, prev[i]);
      if ((rc = etsim_et_enc_node(buf, &b->n, err))) goto done;
      prev[0] = id++;
      n_prev = 1;
    }
done:
  etsim_free(b);
  return rc;
}

int etsim_gen_micro(const etsim_gen_micro_opts_t *o, etsim_et_set_report_t *rep,
                    etsim_error_t *err) {
  if (!o->prefix || !o->npus || !o->n_colls)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "gen micro: need an output prefix, at least one "
                           "NPU and one collective");
  for (size_t c = 0; c < o->n_colls; c++)
    if (o->colls[c] != ETSIM_GEN_SEND_RECV &&
        (o->colls[c] < 0 || o->colls[c] >= ETSIM_COLL_TYPE_COUNT))
      return etsim_error_set(err, ETSIM_EINVAL, "gen micro: bad collective %d", o->colls[c]);
  if (o->size_bytes > INT64_MAX)
    return etsim_error_set(err, ETSIM_ERANGE, "gen micro: size too large");
  /* A collective of no bytes is one etsim sim (and ASTRA-sim) refuses. */
  if (o->size_bytes == 0)
    return etsim_error_set(err, ETSIM_EINVAL, "gen micro: --size must be at least 1 byte");
  if (o->has_root && o->root >= o->npus)
    return etsim_error_set(err, ETSIM_EINVAL, "gen micro: root %u is not one of the %zu ranks",
                           o->root, o->npus);
  size_t count = o->count ? o->count : 1;
  int ids = o->ids;
  if (ids == ETSIM_GEN_IDS_AUTO)
    ids = o->format == ETSIM_ET_OUT_RANK_FILES ? ETSIM_GEN_IDS_CONTINUE : ETSIM_GEN_IDS_RESTART;
  uint64_t per = nodes_per_rank(o, count);
  etsim_et_set_writer_t *set;
  int rc = etsim_et_set_writer_open(&set, o->prefix, o->npus, o->format, err);
  if (rc) return rc;
  etsim_et_buf_t buf = {0}, buf0 = {0};
  uint64_t nodes = 0;
  for (size_t r = 0; r < o->npus; r++) {
    buf.n = 0;
    uint64_t first = ids == ETSIM_GEN_IDS_CONTINUE ? per * r : 0;
    size_t before = etsim_et_set_writer_n_files(set);
    /* Only a send/recv ring or continued ids make ranks differ. */
    int same = r > 0 && ids == ETSIM_GEN_IDS_RESTART && !has_ring(o);
    if (same) {
      if ((rc = etsim_et_set_writer_rank_like(set, r, 0, buf0.p, buf0.n, err))) break;
      continue;
    }
    if ((rc = build_rank(o, r, first, count, &buf, err)) ||
        (rc = etsim_et_set_writer_rank(set, r, buf.p, buf.n, err)))
      break;
    if (r == 0) {
      etsim_et_buf_t t = buf0;
      buf0 = buf;
      buf = t;
    }
    if (etsim_et_set_writer_n_files(set) != before) nodes += per;
  }
  etsim_et_buf_free(&buf);
  etsim_et_buf_free(&buf0);
  if (rc) {
    etsim_et_set_writer_abort(set);
    return rc;
  }
  etsim_et_set_report_t r = {o->npus, etsim_et_set_writer_n_files(set), nodes,
                             etsim_et_set_writer_bytes(set), per * o->npus};
  if ((rc = etsim_et_set_writer_commit(set, err))) return rc;
  if (rep) *rep = r;
  return 0;
}

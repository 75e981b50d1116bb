/*
 * level.c — the packet and flow levels as two rows of one table
 * (etsim_netpkt_level_t), so that the simulator's network adapter, `etsim
 * netsim`, sweeps and benchmarks drive either without asking which.
 *
 * Each entry only converts the level's network from `void *` and calls the
 * level's own function; the flow level's counters are mapped onto the
 * packet level's stats record (the fields both have).
 */
#include "pkt_int.h"

#include <string.h>

/* ------------------------------------------------------------ packet level */

static int pkt_create(void **out, const etsim_netpkt_topo_t *topo, const etsim_netpkt_cfg_t *cfg,
                      etsim_error_t *err) {
  etsim_netpkt_t *n = NULL;
  int rc = etsim_netpkt_create(&n, topo, cfg, err);
  *out = n;
  return rc;
}
static void pkt_destroy(void *net) { etsim_netpkt_free(net); }
static void pkt_outputs(void *net, FILE *fct, FILE *pfc, FILE *qlen) {
  etsim_netpkt_set_outputs(net, fct, pfc, qlen);
}
static int pkt_send(void *net, const etsim_netpkt_msg_t *m, uint64_t *id, etsim_error_t *err) {
  return etsim_netpkt_send(net, m, id, err);
}
static int pkt_run(void *net, int64_t t_ps, etsim_error_t *err) {
  return etsim_netpkt_run_until(net, t_ps, err);
}
static int64_t pkt_next(const void *net) { return etsim_netpkt_next_time(net); }
static int64_t pkt_now(const void *net) { return etsim_netpkt_now(net); }
static void pkt_finish(void *net) { etsim_netpkt_finish(net); }
static int pkt_msg(const void *net, uint64_t id, etsim_netpkt_msg_stat_t *o) {
  return etsim_netpkt_msg_stat(net, id, o);
}
static double pkt_rate(const void *net, uint64_t id) {
  return (double)etsim_netpkt_msg_rate(net, id);
}
static void pkt_stats(const void *net, etsim_netpkt_stats_t *s) { etsim_netpkt_get_stats(net, s); }
static uint32_t pkt_nports(const void *net, uint32_t node) {
  return etsim_netpkt_port_count(net, node);
}
static int pkt_port(const void *net, uint32_t node, uint32_t ifindex, etsim_netpkt_port_stat_t *o) {
  return etsim_netpkt_port_stat(net, node, ifindex, o);
}
static int pkt_down(void *net, const uint32_t *ab, size_t k, int64_t t_ps, etsim_error_t *err) {
  return etsim_netpkt_links_down(net, ab, k, t_ps, err);
}

/* -------------------------------------------------------------- flow level */

static int flow_create(void **out, const etsim_netpkt_topo_t *topo, const etsim_netpkt_cfg_t *cfg,
                       etsim_error_t *err) {
  etsim_netflow_t *n = NULL;
  int rc = etsim_netflow_create(&n, topo, cfg, err);
  *out = n;
  return rc;
}
static void flow_destroy(void *net) { etsim_netflow_free(net); }
/* no queues: PFC events and queue lengths do not exist at this level */
static void flow_outputs(void *net, FILE *fct, FILE *pfc, FILE *qlen) {
  (void)pfc, (void)qlen;
  etsim_netflow_set_outputs(net, fct);
}
static int flow_send(void *net, const etsim_netpkt_msg_t *m, uint64_t *id, etsim_error_t *err) {
  return etsim_netflow_send(net, m, id, err);
}
static int flow_run(void *net, int64_t t_ps, etsim_error_t *err) {
  return etsim_netflow_run_until(net, t_ps, err);
}
static int64_t flow_next(const void *net) { return etsim_netflow_next_time(net); }
static int64_t flow_now(const void *net) { return etsim_netflow_now(net); }
static void flow_finish(void *net) { (void)net; }
static int flow_msg(const void *net, uint64_t id, etsim_netpkt_msg_stat_t *o) {
  return etsim_netflow_msg_stat(net, id, o);
}
static double flow_rate(const void *net, uint64_t id) { return etsim_netflow_msg_rate(net, id); }
static void flow_stats(const void *net, etsim_netpkt_stats_t *s) {
  etsim_netflow_stats_t f;
  etsim_netflow_get_stats(net, &f);
  memset(s, 0, sizeof *s);
  s->events = f.events;
  s->msgs = f.msgs;
  s->msgs_done = f.msgs_done;
  s->first_start_ps = f.first_start_ps;
  s->last_done_ps = f.last_done_ps;
  s->qp_records = f.records;
}
static uint32_t flow_nports(const void *net, uint32_t node) {
  return etsim_netflow_port_count(net, node);
}
static int flow_port(const void *net, uint32_t node, uint32_t ifindex,
                     etsim_netpkt_port_stat_t *o) {
  return etsim_netflow_port_stat(net, node, ifindex, o);
}
static int flow_down(void *net, const uint32_t *ab, size_t k, int64_t t_ps, etsim_error_t *err) {
  return etsim_netflow_links_down(net, ab, k, t_ps, err);
}

/* ------------------------------------------------------------------ table */

static const etsim_netpkt_level_t levels[] = {
    {"packet", 1, pkt_create, pkt_destroy, pkt_outputs, pkt_send, pkt_run, pkt_next, pkt_now,
     pkt_finish, pkt_msg, pkt_rate, pkt_stats, pkt_nports, pkt_port, pkt_down},
    {"flow", 0, flow_create, flow_destroy, flow_outputs, flow_send, flow_run, flow_next, flow_now,
     flow_finish, flow_msg, flow_rate, flow_stats, flow_nports, flow_port, flow_down},
};

const etsim_netpkt_level_t *etsim_netpkt_level_find(const char *name) {
  for (size_t i = 0; name && i < sizeof levels / sizeof levels[0]; i++)
    if (!strcmp(levels[i].name, name)) return &levels[i];
  return NULL;
}

/*
 * pkt_timeline.c — a packet-level network's port counters over time, written as a
 * Perfetto timeline with the network's messages (see etsim/netpkt.h).
 *
 * Samples live in flat arrays, port-major (port p's samples are
 * [p*cap, p*cap+n)), set aside once at create, so sampling never
 * allocates.  A sample holds what happened during its interval: bytes sent
 * and paused picoseconds as differences of the port's running totals, and
 * the egress queue seen at the sample instant.  When the arrays fill,
 * samples 2k and 2k+1 merge into k (sums for bytes and paused time, the
 * larger queue, the mean rate) and the interval doubles; samples start at
 * time 0 and cap is even, so every merged sample again covers one whole
 * interval.
 */
#include "etsim/netpkt.h"

#include <inttypes.h>
#include <string.h>

/* About 32 MB of samples at most, whatever the network's size. */
#define SAMPLE_BUDGET ((size_t)32 << 20)
#define CAP_MAX 4096
#define CAP_MIN 64

typedef struct {
  uint64_t tx_bytes; /* sent during the interval */
  uint64_t paused_ps;
  uint64_t q_bytes; /* largest egress queue sampled in the interval */
} sample_t;

struct etsim_netpkt_tl {
  const etsim_netpkt_t *net;
  const etsim_netpkt_topo_t *topo;
  uint32_t n_ports;
  uint32_t *port_base;             /* n_nodes + 1: node v's ports are [base[v], base[v+1]) */
  uint32_t *peer;                  /* per port */
  uint64_t *last_tx, *last_paused; /* running totals at the last sample */
  sample_t *s;                     /* n_ports * cap */
  double *rate_gbps;               /* n_rates * cap */
  uint32_t n_rates;
  size_t cap, n;
  int64_t interval_ps;
};

int etsim_netpkt_tl_create(etsim_netpkt_tl_t **out, const etsim_netpkt_t *net,
                           const etsim_netpkt_topo_t *topo, int64_t interval_ps, uint64_t n_msgs,
                           etsim_error_t *err) {
  if (interval_ps <= 0)
    return etsim_error_set(err, ETSIM_EINVAL, "timeline: the sampling interval must be > 0");
  etsim_netpkt_tl_t *tl = etsim_calloc(1, sizeof *tl);
  if (!tl) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  tl->net = net;
  tl->topo = topo;
  tl->interval_ps = interval_ps;
  tl->n_rates = n_msgs < ETSIM_NETPKT_TL_RATE_MSGS ? (uint32_t)n_msgs : ETSIM_NETPKT_TL_RATE_MSGS;
  tl->port_base = etsim_malloc((topo->n_nodes + 1) * sizeof *tl->port_base);
  if (!tl->port_base) goto nomem;
  uint32_t np = 0;
  for (uint32_t v = 0; v < topo->n_nodes; v++) {
    tl->port_base[v] = np;
    np += etsim_netpkt_port_count(net, v);
  }
  tl->port_base[topo->n_nodes] = np;
  tl->n_ports = np;
  size_t series = (size_t)np + tl->n_rates;
  size_t cap = SAMPLE_BUDGET / sizeof(sample_t) / (series ? series : 1);
  cap = cap > CAP_MAX ? CAP_MAX : cap < CAP_MIN ? CAP_MIN : cap;
  tl->cap = cap & ~(size_t)1;
  tl->peer = etsim_malloc((np ? np : 1) * sizeof *tl->peer);
  tl->last_tx = etsim_calloc(np ? np : 1, sizeof *tl->last_tx);
  tl->last_paused = etsim_calloc(np ? np : 1, sizeof *tl->last_paused);
  tl->s = etsim_calloc((np ? np : 1) * tl->cap, sizeof *tl->s);
  tl->rate_gbps = etsim_calloc((tl->n_rates ? tl->n_rates : 1) * tl->cap, sizeof(double));
  if (!tl->peer || !tl->last_tx || !tl->last_paused || !tl->s || !tl->rate_gbps) goto nomem;
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    for (uint32_t p = tl->port_base[v]; p < tl->port_base[v + 1]; p++) {
      etsim_netpkt_port_stat_t ps;
      etsim_netpkt_port_stat(net, v, p - tl->port_base[v] + 1, &ps);
      tl->peer[p] = ps.peer;
    }
  *out = tl;
  return 0;
nomem:
  etsim_netpkt_tl_free(tl);
  return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
}

void etsim_netpkt_tl_free(etsim_netpkt_tl_t *tl) {
  if (!tl) return;
  etsim_free(tl->port_base);
  etsim_free(tl->peer);
  etsim_free(tl->last_tx);
  etsim_free(tl->last_paused);
  etsim_free(tl->s);
  etsim_free(tl->rate_gbps);
  etsim_free(tl);
}

int64_t etsim_netpkt_tl_next(const etsim_netpkt_tl_t *tl) {
  return (int64_t)(tl->n + 1) * tl->interval_ps;
}

int64_t etsim_netpkt_tl_interval(const etsim_netpkt_tl_t *tl) { return tl->interval_ps; }

/* Halve the sample count: 2k and 2k+1 become k, the interval doubles. */
static void merge(etsim_netpkt_tl_t *tl) {
  size_t half = tl->n / 2;
  for (uint32_t p = 0; p < tl->n_ports; p++) {
    sample_t *s = tl->s + (size_t)p * tl->cap;
    for (size_t k = 0; k < half; k++) {
      sample_t a = s[2 * k], b = s[2 * k + 1];
      s[k].tx_bytes = a.tx_bytes + b.tx_bytes;
      s[k].paused_ps = a.paused_ps + b.paused_ps;
      s[k].q_bytes = a.q_bytes > b.q_bytes ? a.q_bytes : b.q_bytes;
    }
  }
  for (uint32_t m = 0; m < tl->n_rates; m++) {
    double *r = tl->rate_gbps + (size_t)m * tl->cap;
    for (size_t k = 0; k < half; k++) r[k] = (r[2 * k] + r[2 * k + 1]) / 2;
  }
  tl->n = half;
  tl->interval_ps *= 2;
}

void etsim_netpkt_tl_sample(etsim_netpkt_tl_t *tl) {
  size_t k = tl->n;
  /* The network's clock is at its last event, at or before the sample
   * time; pauses still open run on to the sample time. */
  int64_t ahead = etsim_netpkt_tl_next(tl) - etsim_netpkt_now(tl->net);
  /* (n is not advanced until the end, so _next is this sample's time.) */
  if (ahead < 0) ahead = 0;
  for (uint32_t v = 0; v < tl->topo->n_nodes; v++)
    for (uint32_t p = tl->port_base[v]; p < tl->port_base[v + 1]; p++) {
      etsim_netpkt_port_stat_t ps;
      etsim_netpkt_port_stat(tl->net, v, p - tl->port_base[v] + 1, &ps);
      sample_t *s = tl->s + (size_t)p * tl->cap + k;
      s->tx_bytes = ps.tx_bytes - tl->last_tx[p];
      uint64_t paused = (uint64_t)ps.paused_ps;
      for (uint8_t b = ps.paused_prios; b; b &= (uint8_t)(b - 1)) paused += (uint64_t)ahead;
      s->paused_ps = paused - tl->last_paused[p];
      s->q_bytes = ps.qbytes;
      tl->last_tx[p] = ps.tx_bytes;
      tl->last_paused[p] = paused;
    }
  /* A message sent for a later time (the simulator sends ahead of the
   * network's clock) has no rate yet. */
  int64_t at = etsim_netpkt_tl_next(tl);
  for (uint32_t m = 0; m < tl->n_rates; m++) {
    etsim_netpkt_msg_stat_t ms;
    int live = etsim_netpkt_msg_stat(tl->net, m, &ms) == 0 && ms.start_ps <= at;
    tl->rate_gbps[(size_t)m * tl->cap + k] =
        live ? (double)etsim_netpkt_msg_rate(tl->net, m) / 1e9 : 0;
  }
  tl->n++;
  if (tl->n == tl->cap) merge(tl);
}

/* ------------------------------------------------------------- writing */

static double us(int64_t ps) { return (double)ps / 1e6; }

/* One counter of node v over all samples: an event whenever a port's
 * value changes, and a closing one at the end.  `what` 0 tx Gb/s, 1 queue
 * KB, 2 paused %. */
static void counter(FILE *f, const etsim_netpkt_tl_t *tl, size_t n, uint32_t v, int what,
                    const uint8_t *active) {
  static const char *names[] = {"tx Gb/s", "queue KB", "paused %"};
  uint32_t b = tl->port_base[v], e = tl->port_base[v + 1];
  double iv = (double)tl->interval_ps;
  for (size_t k = 0; k <= n; k++) {
    int changed = k == 0 || k == n;
    for (uint32_t p = b; p < e && !changed; p++) {
      const sample_t *s = tl->s + (size_t)p * tl->cap;
      if (!active[p]) continue;
      changed = what == 0   ? s[k].tx_bytes != s[k - 1].tx_bytes
                : what == 1 ? s[k].q_bytes != s[k - 1].q_bytes
                            : s[k].paused_ps != s[k - 1].paused_ps;
    }
    if (!changed) continue;
    fprintf(f,
            ",\n{\"ph\":\"C\",\"pid\":%u,\"name\":\"%s\",\"ts\":%.6f,"
            "\"args\":{",
            v + 1, names[what], us((int64_t)k * tl->interval_ps));
    int first = 1;
    for (uint32_t p = b; p < e; p++) {
      if (!active[p]) continue;
      const sample_t *s = tl->s + (size_t)p * tl->cap + k;
      double val = 0;
      if (k < n)
        val = what == 0   ? (double)s->tx_bytes * 8e3 / iv
              : what == 1 ? (double)s->q_bytes / 1e3
                          : (double)s->paused_ps * 100 / iv;
      fprintf(f, "%s\"p%u>%u\":%.6g", first ? "" : ",", p - b + 1, tl->peer[p], val);
      first = 0;
    }
    fputs("}}", f);
  }
}

static int write_msgs(const char *path, const etsim_netpkt_tl_t *tl,
                      const etsim_netpkt_topo_t *topo, const etsim_netpkt_msg_stat_t *msgs,
                      size_t n_msgs, etsim_error_t *err) {
  uint8_t *active = NULL;
  if (tl) {
    /* Ports that never sent, queued or paused are left out. */
    active = etsim_calloc(tl->n_ports ? tl->n_ports : 1, 1);
    if (!active) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    for (uint32_t p = 0; p < tl->n_ports; p++)
      for (size_t k = 0; k < tl->n && !active[p]; k++) {
        const sample_t *s = tl->s + (size_t)p * tl->cap + k;
        active[p] = s->tx_bytes || s->q_bytes || s->paused_ps;
      }
  }
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) {
    etsim_free(active);
    return rc;
  }
  FILE *f = o.fp;
  uint32_t msg_pid = topo->n_nodes + 1;
  /* When every message completed, samples end with the interval of the
   * last completion: a queue monitor or the simulator's last events may run
   * the network on, idle.  Otherwise (a deadlock) all of them are kept. */
  size_t n = 0;
  if (tl) {
    int64_t last = 0;
    int all_done = n_msgs > 0;
    for (size_t i = 0; i < n_msgs; i++) {
      int64_t end = msgs[i].acked_ps >= 0 ? msgs[i].acked_ps : msgs[i].delivered_ps;
      if (end < 0) all_done = 0;
      else if (msgs[i].start_ps >= 0 && end > last) last = end;
    }
    n = tl->n;
    if (all_done && (size_t)(last / tl->interval_ps) + 1 < n)
      n = (size_t)(last / tl->interval_ps) + 1;
  }
  fprintf(f,
          "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,"
          "\"args\":{\"name\":\"messages\"}}",
          msg_pid);
  fprintf(f,
          ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,"
          "\"args\":{\"sort_index\":-1}}",
          msg_pid);
  for (size_t i = 0; i < n_msgs; i++) {
    const etsim_netpkt_msg_stat_t *m = &msgs[i];
    int64_t end = m->acked_ps >= 0 ? m->acked_ps : m->delivered_ps;
    if (m->start_ps < 0 || end < 0) continue; /* never finished: nothing to draw */
    double slow = m->standalone_ps > 0 ? (double)(end - m->start_ps) / (double)m->standalone_ps : 0;
    fprintf(f,
            ",\n{\"ph\":\"b\",\"cat\":\"msg\",\"id\":%zu,\"pid\":%u,"
            "\"tid\":%u,\"ts\":%.6f,\"name\":\"from host %u\","
            "\"args\":{\"msg\":%zu,\"dst\":%u,\"bytes\":%" PRIu64
            ",\"fct_us\":%.6f,\"slowdown\":%.4f}}",
            i, msg_pid, m->src, us(m->start_ps), m->src, i, m->dst, m->bytes, us(end - m->start_ps),
            slow);
    fprintf(f,
            ",\n{\"ph\":\"e\",\"cat\":\"msg\",\"id\":%zu,\"pid\":%u,"
            "\"tid\":%u,\"ts\":%.6f,\"name\":\"from host %u\"}",
            i, msg_pid, m->src, us(end), m->src);
  }
  if (tl) {
    for (size_t k = 0; k <= n && tl->n_rates; k++) {
      int changed = k == 0 || k == n;
      for (uint32_t m = 0; m < tl->n_rates && !changed; m++) {
        const double *r = tl->rate_gbps + (size_t)m * tl->cap;
        changed = r[k] != r[k - 1];
      }
      if (!changed) continue;
      fprintf(f,
              ",\n{\"ph\":\"C\",\"pid\":%u,\"name\":\"rate Gb/s\","
              "\"ts\":%.6f,\"args\":{",
              msg_pid, us((int64_t)k * tl->interval_ps));
      for (uint32_t m = 0; m < tl->n_rates; m++)
        fprintf(f, "%s\"msg %u\":%.6g", m ? "," : "", m,
                k < n ? tl->rate_gbps[(size_t)m * tl->cap + k] : 0.0);
      fputs("}}", f);
    }
    for (uint32_t v = 0; v < topo->n_nodes; v++) {
      int any = 0;
      for (uint32_t p = tl->port_base[v]; p < tl->port_base[v + 1]; p++) any |= active[p];
      if (!any) continue;
      fprintf(f,
              ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,"
              "\"args\":{\"name\":\"%s %u\"}}",
              v + 1, topo->is_switch[v] ? "switch" : "host", v);
      for (int what = 0; what < 3; what++) counter(f, tl, n, v, what, active);
    }
  }
  fputs("\n]}\n", f);
  etsim_free(active);
  if (ferror(f)) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  return etsim_outfile_commit(&o, err);
}

int etsim_netpkt_tl_write(const char *path, const etsim_netpkt_tl_t *tl,
                          const etsim_netpkt_topo_t *topo, const etsim_netpkt_level_t *lv,
                          const void *net, size_t n_msgs, etsim_error_t *err) {
  etsim_netpkt_msg_stat_t *ms = etsim_calloc(n_msgs ? n_msgs : 1, sizeof *ms);
  if (!ms) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t i = 0; i < n_msgs; i++)
    if (lv->msg_stat(net, i, &ms[i]))
      ms[i].start_ps = -1; /* not a message of this run: not drawn */
  int rc = write_msgs(path, tl, topo, ms, n_msgs, err);
  etsim_free(ms);
  return rc;
}

int etsim_netpkt_tl_run_until(etsim_netpkt_tl_t *tl, etsim_netpkt_t *net, int64_t t_ps,
                              etsim_error_t *err) {
  for (int64_t at; (at = etsim_netpkt_tl_next(tl)) <= t_ps;) {
    /* Samples so far cover [0, at - interval). */
    int64_t covered = at - tl->interval_ps;
    etsim_netpkt_stats_t st;
    etsim_netpkt_get_stats(net, &st);
    if (st.msgs_done == st.msgs && covered >= st.last_done_ps) break;
    if (etsim_netpkt_next_time(net) == INT64_MAX && covered >= etsim_netpkt_now(net)) break;
    int rc = etsim_netpkt_run_until(net, at, err);
    if (rc) return rc;
    etsim_netpkt_tl_sample(tl);
  }
  return etsim_netpkt_run_until(net, t_ps, err);
}

/* etsim reports: what a simulation says, for people and for programs.
 *
 *   astra lines  "sys[N] finished, T cycles, exposed communication E cycles."
 *                (ASTRA-sim's shape, so existing scripts keep working)
 *   summary      iteration time, compute, exposed communication per type,
 *                bytes moved, wall time and events/s
 *   JSON         {"npus":[...], "total_ns", "wall_s", "events", "collectives"}
 *   CSV          one row per executed node (needs record_nodes)
 *   timeline     Perfetto / Chrome traceEvents JSON in us, one process per
 *                NPU, a compute and a communication track, flow arrows for
 *                dependencies (needs record_nodes)
 *   net timeline the same format for a packet-level network on its own
 *                (etsim netsim --timeline): port counters and messages
 * Files are written through a temporary name and renamed when complete.
 */
#ifndef ETSIM_REPORT_H
#define ETSIM_REPORT_H

#include "etsim/et.h"
#include "etsim/netpkt.h"
#include "etsim/sim.h"

#include <stdio.h>

void etsim_report_astra_lines(FILE *f, const etsim_sim_result_t *r);
void etsim_report_summary(FILE *f, const etsim_sim_result_t *r, const etsim_topo_t *topo);
int etsim_report_json(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                      etsim_error_t *err);
int etsim_report_csv(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                     etsim_error_t *err);
int etsim_report_timeline(const char *path, const etsim_sim_result_t *r,
                          const etsim_et_set_t *set, etsim_error_t *err);

/* Network timelines: a packet-level network's counters over time, and
 * its messages, as a Perfetto / Chrome traceEvents file.
 *
 * The recorder samples every port of a running packet-level network
 * (etsim_netpkt_t) at a fixed simulated interval: bytes sent, paused time
 * and the egress queue.  The caller drives the network up to each sample
 * time (etsim_netpkt_run_until) and then calls etsim_report_nettl_sample, so the
 * network itself needs no hook and runs exactly as it would in one go.
 * Memory is bounded: when a port has `cap` samples, neighbouring samples
 * merge and the interval doubles, so a long run keeps its whole span at a
 * coarser step instead of growing without limit.
 *
 * The writer lays the file out the way a network study reads it:
 *   - one process per node ("host 3", "switch 16") with three counters,
 *     each with one series per port ("p2>16": port 2, towards node 16):
 *     "tx Gb/s" (mean over the interval), "queue KB" (the largest sampled
 *     egress queue in the interval) and "paused %" (time the port spent
 *     paused by PFC, summed over priorities, over the interval);
 *   - a "messages" process: every message as an async slice from its start
 *     to its completion (ACKed when known, else delivered), grouped by
 *     source host, and "rate Gb/s" counters for the first messages
 *     (ETSIM_REPORT_NETTL_RATE_MSGS), the sending rate congestion control set.
 * A counter event is only written when a value changed, so idle ports cost
 * nothing.  Files go through a temporary name and are renamed when complete.
 */
/* Messages whose sending rate is recorded (ids 0 .. this-1). */
#define ETSIM_REPORT_NETTL_RATE_MSGS 64

typedef struct etsim_report_nettl etsim_report_nettl_t;

/* A recorder for `net` on `topo` (both borrowed; they must outlive it),
 * first sampling every `interval_ps` (> 0) from time 0, recording the rate
 * of messages 0 .. min(n_msgs, ETSIM_REPORT_NETTL_RATE_MSGS)-1.  ETSIM_EINVAL for
 * a non-positive interval, ETSIM_ENOMEM. */
int etsim_report_nettl_create(etsim_report_nettl_t **out, const etsim_netpkt_t *net,
                       const etsim_netpkt_topo_t *topo, int64_t interval_ps,
                       uint64_t n_msgs, etsim_error_t *err);
void etsim_report_nettl_free(etsim_report_nettl_t *tl);

/* Simulated time (ps) of the next sample: run the network until it, then
 * call etsim_report_nettl_sample. */
int64_t etsim_report_nettl_next(const etsim_report_nettl_t *tl);

/* Record every port at etsim_report_nettl_next(tl); the network must have run
 * exactly up to that time.  Never fails: memory was set aside at create. */
void etsim_report_nettl_sample(etsim_report_nettl_t *tl);

/* The current interval (ps): the first one, doubled at each merge. */
int64_t etsim_report_nettl_interval(const etsim_report_nettl_t *tl);

/* Write the timeline to `path`: the recorder's counters when `tl` is not
 * NULL (it is NULL for a network that has none, e.g. the flow level), and
 * the n_msgs messages in `msgs` (borrowed; from etsim_netpkt_msg_stat or
 * etsim_netflow_msg_stat).  Errors name the path. */
int etsim_report_nettl_write(const char *path, const etsim_report_nettl_t *tl,
                      const etsim_netpkt_topo_t *topo,
                      const etsim_netpkt_msg_stat_t *msgs, size_t n_msgs,
                      etsim_error_t *err);

#endif

// rdma_run: the ns-3 side of etsim's comparison with the ns-3 RDMA simulator
// (written for etsim; it is built inside an astra-network-ns3 checkout, as
// scratch/rdma_run.cc, never inside etsim -- see README.md here).
//
// Usage: rdma_run CONFIG
//
// The astra-network-ns3 fork ships only scratch/common.h (config reader and
// network builder) and expects ASTRA-sim to start the messages.  This driver
// takes the place of the HPCC repository's third.cc: it reads the KEY value
// config through common.h, builds the network, starts every flow of
// FLOW_FILE at its start time with the window and base RTT that third.cc
// gives (the largest BDP and RTT with GLOBAL_T 1, the pair's otherwise; no
// window without HAS_WIN), writes FCT_OUTPUT_FILE and PFC_OUTPUT_FILE, and
// stops when the last flow is acknowledged.
#define ENABLE_QP 1
#include "common.h"

static uint32_t g_done = 0;

// Optional per-QP rate trace (env RATE_TRACE=path, RATE_TRACE_NS=interval,
// RATE_TRACE_START=first sample in ns):
// one line per sample and QP: time_ns src dst rate_bps snd_nxt snd_una.
static FILE *g_rate_out = nullptr;
static uint64_t g_rate_ns = 1000;
static void sample_rates() {
  for (uint32_t i = 0; i < n.GetN(); i++) {
    if (n.Get(i)->GetNodeType() != 0)
      continue;
    Ptr<RdmaDriver> drv = n.Get(i)->GetObject<RdmaDriver>();
    for (auto &kv : drv->m_rdma->m_qpMap) {
      Ptr<RdmaQueuePair> q = kv.second;
      fprintf(g_rate_out, "%lu %u %u %lu %lu %lu\n",
              Simulator::Now().GetTimeStep(), ip_to_node_id(q->sip),
              ip_to_node_id(q->dip), q->m_rate.GetBitRate(), q->snd_nxt,
              q->snd_una);
    }
  }
  Simulator::Schedule(NanoSeconds(g_rate_ns), &sample_rates);
}

// One FCT line per finished QP: sip dip sport dport size start_ns fct_ns
// standalone_ns, standalone = base RTT + wire bytes / bottleneck rate, with
// 48 B of headers charged per packet (the HPCC repository's convention).
static void on_qp_done(FILE *out, Ptr<RdmaQueuePair> q) {
  uint32_t s = ip_to_node_id(q->sip), d = ip_to_node_id(q->dip);
  uint64_t base_rtt_ns = pairRtt[s][d], b_bps = pairBw[s][d];
  uint64_t pkts = q->m_size == 0 ? 0 : (q->m_size - 1) / packet_payload_size + 1;
  uint64_t wire_bytes = q->m_size + pkts * 48;
  uint64_t standalone_ns = base_rtt_ns + wire_bytes * 8000000000lu / b_bps;
  fprintf(out, "%08x %08x %u %u %lu %lu %lu %lu\n", q->sip.Get(), q->dip.Get(),
          q->sport, q->dport, q->m_size, q->startTime.GetTimeStep(),
          (Simulator::Now() - q->startTime).GetTimeStep(), standalone_ns);
  fflush(out);
  g_done++;
  if (g_done == flow_num)
    Simulator::Stop();
}

int main(int argc, char *argv[]) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CONFIG\n", argv[0]);
    return 2;
  }
  if (!ReadConf(argv[1]))
    return 2;
  SetConfig();
  SetupNetwork(on_qp_done);
  for (uint32_t i = 0; i < flow_num; i++) {
    uint32_t src, dst, pg, dport;
    uint64_t size;
    double start_s;
    if (!(flowf >> src >> dst >> pg >> dport >> size >> start_s)) {
      fprintf(stderr, "%s: flow %u unreadable\n", flow_file.c_str(), i);
      return 2;
    }
    uint16_t sport = portNumber[src][dst]++;
    uint32_t win = 0;
    if (has_win)
      win = global_t ? maxBdp : pairBdp[n.Get(src)][n.Get(dst)];
    uint64_t rtt = global_t ? maxRtt : pairRtt[src][dst];
    RdmaClientHelper c(pg, serverAddress[src], serverAddress[dst], sport, dport,
                       size, win, rtt, nullptr, nullptr, 0, src, dst);
    ApplicationContainer app = c.Install(n.Get(src));
    app.Start(Seconds(start_s));
  }
  flowf.close();
  if (getenv("RATE_TRACE")) {
    g_rate_out = fopen(getenv("RATE_TRACE"), "w");
    if (getenv("RATE_TRACE_NS"))
      g_rate_ns = strtoull(getenv("RATE_TRACE_NS"), nullptr, 10);
    // RATE_TRACE_START (ns): first sample, to trace a short window finely
    uint64_t start_ns = getenv("RATE_TRACE_START")
                            ? strtoull(getenv("RATE_TRACE_START"), nullptr, 10)
                            : g_rate_ns;
    Simulator::Schedule(NanoSeconds(start_ns), &sample_rates);
  }
  Simulator::Stop(Seconds(simulator_stop_time));
  Simulator::Run();
  Simulator::Destroy();
  printf("flows done %u of %u\n", g_done, flow_num);
  return g_done == flow_num ? 0 : 1;
}

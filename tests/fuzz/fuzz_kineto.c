/*
 * fuzz_kineto.c — libFuzzer target for the Kineto side of `convert --from
 * pytorch --kineto`: any bytes as the Kineto trace of a small fixed host
 * trace must join into a trace that loads and validates clean, or be
 * refused with a message — never a crash, a hang, a leak or a file left.
 */
#include "fuzz_util.h"

#include "etsim/convpt.h"
#include "etsim/etcheck.h"

static void count(void *user, int severity, const char *line) {
  (void)line;
  if (severity == ETSIM_CHECK_PROBLEM) (*(long *)user)++;
}

/* Two host operators on one thread, the second a collective. */
static const char host[] =
    "{\"schema\": \"1.1.0-chakra.0.0.4\", \"pid\": 7, \"time\": \"t\", \"start_ts\": 100,"
    " \"finish_ts\": 900, \"nodes\": [\n"
    "{\"id\": 1, \"name\": \"[pytorch|profiler|execution_trace|process]\", \"ctrl_deps\": 1,"
    " \"inputs\": {\"values\": [], \"shapes\": [], \"types\": []}, \"outputs\": {\"values\": [],"
    " \"shapes\": [], \"types\": []}, \"attrs\": []},\n"
    "{\"id\": 2, \"name\": \"[pytorch|profiler|execution_trace|thread]\", \"ctrl_deps\": 1,"
    " \"inputs\": {\"values\": [], \"shapes\": [], \"types\": []}, \"outputs\": {\"values\": [],"
    " \"shapes\": [], \"types\": []}, \"attrs\": [{\"name\": \"tid\", \"type\": \"uint64\","
    " \"value\": 1}]},\n"
    "{\"id\": 3, \"name\": \"aten::mm\", \"ctrl_deps\": 2, \"inputs\": {\"values\": [[10, 11, 0,"
    " 64, 4, \"cuda:0\"]], \"shapes\": [[8, 8]], \"types\": [\"Tensor(float)\"]}, \"outputs\":"
    " {\"values\": [], \"shapes\": [], \"types\": []}, \"attrs\": [{\"name\": \"rf_id\", \"type\":"
    " \"uint64\", \"value\": 3}, {\"name\": \"tid\", \"type\": \"uint64\", \"value\": 1}]},\n"
    "{\"id\": 4, \"name\": \"c10d::allreduce_\", \"ctrl_deps\": 2, \"inputs\": {\"values\":"
    " [[[12, 13, 0, 64, 4, \"cuda:0\"]]], \"shapes\": [[[8, 8]]], \"types\":"
    " [\"GenericList[Tensor(float)]\"]}, \"outputs\": {\"values\": [], \"shapes\": [], \"types\":"
    " []}, \"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": 4}, {\"name\":"
    " \"tid\", \"type\": \"uint64\", \"value\": 1}]}\n]}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *hp;
  if (!hp && !(hp = fz_write(0, "host.json", (const uint8_t *)host, sizeof host - 1)))
    __builtin_trap();
  if (size > 65536) return 0;
  const char *kp = fz_write(1, "kineto.json", data, size);
  if (!kp) return 0;
  const char *out = fz_path(2, "out.et");
  etsim_error_t err = {0};
  etsim_convpt_opts_t o = {0};
  o.rank = 0;
  o.kineto_path = kp;
  o.groups_path = "";
  int rc = etsim_convpt_convert(hp, out, &o, NULL, &err);
  if (rc == 0) {
    etsim_et_trace_t *t;
    if (etsim_et_trace_load(&t, out, 0, &err) != 0) __builtin_trap();
    long problems = 0;
    etsim_et_validate(t, count, &problems);
    if (problems) __builtin_trap(); /* converted output is always valid */
    etsim_et_trace_free(t);
    remove(out);
  } else {
    fz_refused(rc, &err);
    if (access(out, F_OK) == 0) __builtin_trap(); /* a failure writes nothing */
  }
  fz_no_tmp();
  return 0;
}

/*
 * etsim/convtext.h — ASTRA-sim 1.0 text workloads to Chakra ET (the part of
 * the `conv` module that Chakra's text converter covers).
 *
 * The text format (docs/gen.md): line 1 names the parallelism (MICRO, DATA,
 * MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_DLRM <last bottom
 * layer>, HYBRID_DLRM_ENHANCED <n>, HYBRID_TRANSFORMER
 * model_parallel_NPU_group: <G>), line 2 the layer count, then one line
 * per layer: name, reserved, and forward / input-gradient / weight-gradient
 * triples of (compute time, ALLREDUCE|ALLGATHER|ALLTOALL|REDUCESCATTER|NONE,
 * bytes), then the update time.  NONE means no collective.  Every rank gets
 * the same graph (HYBRID_TRANSFORMER: up to its communicator groups), so
 * ranks share one file through the manifest unless ETSIM_ET_OUT_RANK_FILES.
 *
 * This file sits beside convpt.h (the PyTorch converter's) so the two
 * converters do not edit one header.  It writes through et's in-memory
 * encoder and set writer (etsim_et_enc_*, etsim_et_set_writer_*).
 */
#ifndef ETSIM_CONVTEXT_H
#define ETSIM_CONVTEXT_H

#include "etsim/et.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  ETSIM_TEXT_TIME_US = 0, /* times are microseconds (Chakra's converter) */
  ETSIM_TEXT_TIME_NS = 1  /* times are ASTRA-sim 1.0 cycles = ns */
};

typedef struct etsim_conv_text_opts {
  size_t npus;   /* ranks to write (> 0) */
  size_t passes; /* training iterations (0 means 1) */
  int time_unit; /* ETSIM_TEXT_TIME_* */
  int format;    /* ETSIM_ET_OUT_* */
  const char *prefix;
  /* Optional: where to write the communicator groups of HYBRID_TRANSFORMER
   * (default "<prefix>.comm_group.json"). */
  const char *comm_group_path;
} etsim_conv_text_opts_t;

/*
 * Convert the text workload at `path`.  Malformed input fails with
 * ETSIM_EFORMAT and "FILE:LINE:COLUMN: expected ..., found '...'" in err;
 * nothing is written then.  *rep (may be NULL) says what was written.
 */
int etsim_conv_text(const char *path, const etsim_conv_text_opts_t *o, etsim_et_set_report_t *rep,
                    etsim_error_t *err);

/* Same, from text in memory; `name` is used in messages and metadata. */
int etsim_conv_text_mem(const char *name, const char *text, size_t len,
                        const etsim_conv_text_opts_t *o, etsim_et_set_report_t *rep,
                        etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_CONVTEXT_H */

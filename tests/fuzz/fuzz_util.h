/*
 * fuzz_util.h — what the libFuzzer targets share: the input written to a
 * file of this process (most parsers read paths), and the rule every
 * target checks, that a refusal explains itself: a negative code other
 * than out-of-memory or internal error, with a message.
 */
#ifndef ETSIM_FUZZ_UTIL_H
#define ETSIM_FUZZ_UTIL_H

#include "etsim/base.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A folder of this process for the target's files (made once), under
 * $TMPDIR when set: scripts/fuzz.sh points it at a folder it removes at
 * the end, so no run leaves files behind in /tmp. */
static inline const char *fz_dir(void) {
  static char dir[224];
  if (!dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%.180s/etsim-fuzz-%ld", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
    mkdir(dir, 0700);
  }
  return dir;
}

/* Path of `name` in fz_dir() (a static buffer per call site's slot k). */
static inline const char *fz_path(int k, const char *name) {
  static char buf[4][320];
  snprintf(buf[k & 3], sizeof buf[0], "%s/%s", fz_dir(), name);
  return buf[k & 3];
}

/* Write the input to fz_path(k, name); returns the path or NULL. */
static inline const char *fz_write(int k, const char *name, const uint8_t *data, size_t size) {
  const char *p = fz_path(k, name);
  FILE *fp = fopen(p, "wb");
  if (!fp) return NULL;
  size_t put = size ? fwrite(data, 1, size, fp) : 0;
  if (fclose(fp) != 0 || put != size) return NULL;
  return p;
}

/* A refusal must say why, and bad input is not an internal error. */
static inline void fz_refused(int rc, const etsim_error_t *err) {
  if (rc >= 0 || rc == ETSIM_EINTERNAL || !err->msg[0]) {
    fprintf(stderr, "fuzz: rc %d (%s), message '%s'\n", rc, etsim_errname(rc), err->msg);
    __builtin_trap();
  }
}

/* No temporary output may outlive a call: nothing named *.tmp.* left. */
static inline void fz_no_tmp(void) {
  DIR *d = opendir(fz_dir());
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".tmp.")) __builtin_trap();
  if (d) closedir(d);
}

#endif

/*
 * mpirun.c — how etsim's commands reach their MPI programs (etsim itself
 * does not link MPI): find the sibling program (etsim-sweep,
 * etsim-replay), tell whether mpirun started us, and start mpirun with
 * this command line minus --np.  sweep, replay and plan shared these as
 * copies.
 */
#include "cli/cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_self_path(char *out, size_t cap) {
  ssize_t n = readlink("/proc/self/exe", out, cap - 1);
  if (n <= 0) return -1;
  out[n] = 0;
  return 0;
}

int cli_inside_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int cli_sibling(const char *env_var, const char *name, char *out, size_t cap) {
  out[0] = 0;
  const char *env = getenv(env_var);
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return access(out, X_OK) == 0;
  }
  char self[PATH_MAX];
  if (cli_self_path(self, sizeof self)) return 0;
  char *slash = strrchr(self, '/');
  if (!slash) return 0;
  *slash = 0;
  if ((size_t)snprintf(out, cap, "%s/%s", self, name) >= cap) {
    out[0] = 0;
    return 0;
  }
  return access(out, X_OK) == 0;
}

size_t cli_args_minus_np(char **dst, int argc, char **argv) {
  size_t k = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--np")) {
      i++;
      continue;
    }
    if (!strncmp(argv[i], "--np=", 5)) continue;
    dst[k++] = argv[i];
  }
  return k;
}

int cli_exec_mpirun(const char *cmd, uint64_t np, const char *prog, int argc, char **argv,
                    const char *last, int announce) {
  char np_buf[32];
  snprintf(np_buf, sizeof np_buf, "%llu", (unsigned long long)np);
  const char *mpirun = getenv("ETSIM_MPIRUN");
  if (!mpirun || !*mpirun) mpirun = "mpirun";
  char **a = calloc((size_t)argc + 64, sizeof *a);
  if (!a) return ETSIM_EXIT_INTERNAL;
  size_t k = 0;
  a[k++] = (char *)mpirun;
  a[k++] = "-np";
  a[k++] = np_buf;
  a[k++] = "--oversubscribe";
  if (geteuid() == 0) {
    a[k++] = "--allow-run-as-root";
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  /* Extra mpirun words, split on spaces (a copy: exec needs them whole). */
  char extra[4096];
  const char *ex = getenv("ETSIM_MPIRUN_ARGS");
  if (ex && *ex) {
    snprintf(extra, sizeof extra, "%s", ex);
    for (char *tok = strtok(extra, " \t"); tok && k < 40; tok = strtok(NULL, " \t")) a[k++] = tok;
  }
  a[k++] = (char *)prog;
  k += cli_args_minus_np(a + k, argc, argv);
  if (last) a[k++] = (char *)last;
  a[k] = NULL;
  fflush(NULL);
  if (announce) fprintf(stderr, "etsim: %s: launching %s -np %s %s\n", cmd, mpirun, np_buf, prog);
  execvp(mpirun, a);
  fprintf(stderr, "etsim: %s: cannot run %s (install openmpi-bin or set ETSIM_MPIRUN)\n", cmd,
          mpirun);
  free(a);
  return ETSIM_EXIT_INTERNAL;
}

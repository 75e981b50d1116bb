/* placeholder, replaced below */
#include "cli/cli.h"
int etsim_cmd_diff(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return ETSIM_EXIT_INTERNAL;
}

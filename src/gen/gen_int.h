/*
 * gen_int.h — private furniture of the generators (the node builder itself
 * is public in gen.h, since the text converter uses it too).
 */
#ifndef ETSIM_GEN_INT_H
#define ETSIM_GEN_INT_H

#include "etsim/gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Collective name in lower case ("all_reduce"), into out. */
static inline void gen_coll_lower(int coll, char *out, size_t n) {
  const char *s = coll == ETSIM_GEN_SEND_RECV ? "send_recv" : etsim_coll_type_name(coll);
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++)
    out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
  out[i] = 0;
}

#endif

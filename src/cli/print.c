/*
 * print.c — how commands print the same things alike: JSON strings and
 * times in microseconds (inspect, diff and edit had each their copy).
 */
#include "cli/cli.h"

#include <stdio.h>

void cli_json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

const char *cli_us(uint64_t ns, char *buf, size_t cap) {
  if (ns % 1000 == 0) snprintf(buf, cap, "%llu", (unsigned long long)(ns / 1000));
  else
    snprintf(buf, cap, "%llu.%03llu", (unsigned long long)(ns / 1000),
             (unsigned long long)(ns % 1000));
  return buf;
}

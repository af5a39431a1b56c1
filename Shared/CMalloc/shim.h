// glibc's malloc tuning (mallopt(3)), which Swift's Glibc module does not bring in. Part of
// libc: nothing more to link.
#ifndef CASSETTE_CMALLOC_SHIM_H
#define CASSETTE_CMALLOC_SHIM_H
#include <malloc.h>
#endif

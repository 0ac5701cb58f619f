// A stand-in for likwid.h's marker API (the subset johnysswlab's experiments use), so that a program built for
// likwid-perfctr -m builds without the library: every LIKWID_MARKER_* is a no-op. The markers only delimit regions
// for likwid's counters; perfforge's application mode measures the program from outside, so nothing is timed or
// reported here. Put -I{shims}/likwid before any directory holding another likwid.h.
#pragma once

#define LIKWID_MARKER_INIT ((void)0)
#define LIKWID_MARKER_THREADINIT ((void)0)
#define LIKWID_MARKER_SWITCH ((void)0)
#define LIKWID_MARKER_REGISTER(tag) ((void)(tag))
#define LIKWID_MARKER_START(tag) ((void)(tag))
#define LIKWID_MARKER_STOP(tag) ((void)(tag))
#define LIKWID_MARKER_RESET(tag) ((void)(tag))
#define LIKWID_MARKER_GET(tag, nevents, events, time, count) ((void)(tag))
#define LIKWID_MARKER_CLOSE ((void)0)

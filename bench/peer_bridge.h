#pragma once
/// @file
/// How loom-bench runs a libtorch peer's sides: each peer's sources are built, with
/// peer_harness.cpp (harness.h's registration functions, for that peer only) and
/// peer_server.cpp, into a program of its own, bench-<peer>-sides, that loom-bench starts once
/// and drives over two pipes (the line protocol is in peer_server.cpp). Each side still times
/// itself with ns_per_call, inside its process, and loom-bench alternates the sides A B A B.
///
/// Why not in loom-bench's own process:
/// - Two libtorch versions cannot share one link, nor one link-map namespace even when each
///   is dlopen()ed with RTLD_LOCAL | RTLD_DEEPBIND: C++'s unique symbols (function-local
///   statics of inline functions, template statics: STB_GNU_UNIQUE) bind process-wide to the
///   first definition loaded; with 2.x loaded first, libtorch 1.13's static initialisers
///   fail in c10::Dispatcher::registerFallback (std::system_error "Invalid argument" from a
///   mutex: most likely one bound to 2.x's objects that way), and the process aborts.
/// - dlmopen(LM_ID_NEWLM) gives each its own namespace and loads both, but every namespace
///   then has its own OpenMP runtime (libgomp) and BLAS, and libgomp in libtorch 1.13's
///   namespace aborted in sgemm.256 ("Out of memory allocating 4e11 bytes"). (Timings taken
///   in that try came from a busy machine and say nothing either way.)
/// A process per peer keeps each libtorch with its own runtime, as PyTorch users have it.
///
/// The functions below are the peer's side of that interface, in C (what crosses it is
/// plain numbers and text).

#include <cstddef>

extern "C" {

/// Version of this interface; loom_bench_peer_init rejects another.
#define LOOM_BENCH_PEER_ABI 1

/// Starts the library: sample_ms is --sample-ms. Returns 0, or non-zero with a message in err.
int loom_bench_peer_init(int abi, double sample_ms, char* err, size_t err_len);
/// The number of configuration steps, and the i-th's name ("torch") and line (run it).
int loom_bench_peer_configuration_count(void);
int loom_bench_peer_configure(int i, char* who, size_t who_len, char* line, size_t line_len);
/// The number of sides, and the i-th side's benchmark name.
int loom_bench_peer_side_count(void);
int loom_bench_peer_side_name(int i, char* name, size_t name_len);
/// Runs the i-th side's setup: returns a handle (>= 0), -1 when the side is not available
/// here (an empty Side), or -2 with a message in err.
int loom_bench_peer_setup(int i, char* err, size_t err_len);
/// Takes one sample of a set-up side: up to max values into values, their number into
/// count. Returns 0, or non-zero with a message in err.
int loom_bench_peer_sample(int handle, double* values, int max, int* count, char* err,
                           size_t err_len);

/// The function types, for dlsym.
typedef int (*LoomBenchPeerInit)(int, double, char*, size_t);
typedef int (*LoomBenchPeerCount)(void);
typedef int (*LoomBenchPeerConfigure)(int, char*, size_t, char*, size_t);
typedef int (*LoomBenchPeerSideName)(int, char*, size_t);
typedef int (*LoomBenchPeerSetup)(int, char*, size_t);
typedef int (*LoomBenchPeerSample)(int, double*, int, int*, char*, size_t);
}

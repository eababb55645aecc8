// openmp.h - how the OpenMP teams of the libraries the runtime loads
// (OpenBLAS's OpenMP build, oneDNN) wait between parallel regions.
#ifndef LOCUS_RUNTIME_OPENMP_H
#define LOCUS_RUNTIME_OPENMP_H

namespace locus::rt {

/// Call before loading a library that brings libgomp. Unless the user set
/// OMP_WAIT_POLICY or GOMP_SPINCOUNT, idle OpenMP threads spin for a short
/// while (GOMP_SPINCOUNT=10000), then sleep. libgomp's default spins for
/// much longer, and those spinning threads took the cores from the
/// runtime's own workers (LeNet ran at half speed on 2 cores); sleeping at
/// once (OMP_WAIT_POLICY=PASSIVE) made every parallel region wake its team
/// (LeNet at batch 1 took 240 us instead of 30: a small convolution is
/// four regions). Has no effect when libgomp is loaded already: it reads
/// the environment once.
void settleOpenMpTeams();

/// Call after loading such a library: when libgomp came with it, the
/// runtime's parallel loops (locus_parallel_for) run on libgomp's team from
/// then on, so that one set of threads serves the process. Thread-safe;
/// does nothing when libgomp is not loaded.
void adoptOpenMpTeam();

} // namespace locus::rt

#endif

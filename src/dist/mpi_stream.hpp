#pragma once
// `mpirun -np N apron filter` on one image larger than memory: the MPI world as the streaming engine's team
// (apron/stream.hpp's StreamTeam). Rank 0 hands out band indices one at a time (the Feed of mpi_batch.hpp),
// so ranks of different speeds balance; every band lands at its own offset of the one output file.
#include "apron/stream.hpp"
#include "dist/mpi_batch.hpp"

namespace apron::dist {

// The world's ranks as one team, each on GPU local_rank % cuda_devices of its node (-1 without GPUs).
StreamTeam stream_team(const World& world, int cuda_devices);

} // namespace apron::dist

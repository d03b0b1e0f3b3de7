#pragma once
// `apron batch` across MPI ranks (Open MPI): `mpirun -np N apron batch ...`. Every rank reads the same
// input list; rank 0 hands out item indices one at a time, in order, to whichever rank asks (its own
// readers included), so images of different sizes balance. Each output depends only on its input, so
// the outputs are the same bits whatever the number of ranks. Each rank takes the GPU of its node-local
// rank (unless --devices says otherwise) and writes its own manifest file; rank 0 prints the totals.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apron/batch.hpp"

namespace apron::dist {

struct World {
    bool active = false;  // launched by mpirun / srun and built with MPI
    int rank = 0, size = 1;
    int local_rank = 0, local_size = 1;  // among the ranks of this node
};

// Starts MPI when this process was launched by an MPI launcher (its environment says so) and apron was
// built with MPI; a world of one otherwise. MPI is initialised for the threads it will meet: several
// reader threads ask for work, one at a time under a lock, and rank 0's coordinator thread answers, so
// MPI_THREAD_SERIALIZED is asked for (and an error raised if the library cannot give it).
World start_world(int* argc, char*** argv);
void finish_world(const World& world);
// Waits for every rank (nothing without MPI).
void barrier(const World& world);
// Rank 0's `value`, on every rank (a collective call: every rank makes it); `value` itself without MPI.
int broadcast_from_root(const World& world, int value);
std::uint64_t broadcast_from_root(const World& world, std::uint64_t value);

// Throws apron::Error when the launcher started this process as one of several tasks (srun -n N, mpirun -np
// N: SLURM_STEP_NUM_TASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE) but `world` is not that many ranks: srun without
// an MPI plugin (--mpi=pmix), an apron built without MPI, or an Open MPI that cannot read the launcher's PMI.
// Each task would otherwise be a world of one and do the whole job, and all but one would fail on the
// output's lock.
void check_launch(const World& world);

// Every rank must have resolved the same items (the same names in the same order): rank 0's count and a
// hash of the names are compared on every rank, and a rank that differs ends the job (MPI_Abort) saying so:
// an input folder that changed while the ranks started would otherwise hand the same index to different
// files. Nothing without MPI.
void check_same_items(const World& world, const std::vector<std::string>& names);
// Ends every rank at once after a fatal error on one of them (MPI_Abort), so none waits for it forever.
[[noreturn]] void abort_world(const World& world, int code);

// Hands out the indices 0..n-1 across the ranks (thread-safe next()); the coordinator thread of rank 0
// stops when every other rank has been told that nothing is left.
class Feed {
public:
    Feed(const World& world, std::size_t n);
    ~Feed();
    std::optional<std::size_t> next();

private:
    struct State;
    std::unique_ptr<State> state_;
};

// Every rank's report added up at rank 0 (call it after the Feed is gone: rank 0's coordinator must have
// answered every rank before the ranks meet here) (counts, pixels, bytes, busy time per stage, failures; the time
// is the slowest rank's). Other ranks get theirs back with `failed` set to the total, for the exit status.
BatchReport reduce_reports(const World& world, const BatchReport& mine);

} // namespace apron::dist

// The MPI world as a streaming team (mpi_stream.hpp).
#include "dist/mpi_stream.hpp"

#include <cstdio>
#include <memory>

namespace apron::dist {

StreamTeam stream_team(const World& world, int cuda_devices) {
    StreamTeam team;
    team.rank = world.rank;
    team.size = world.size;
    team.cuda_device = cuda_devices > 0 ? world.local_rank % cuda_devices : -1;
    team.barrier = [world] { barrier(world); };
    team.broadcast = [world](int value) { return broadcast_from_root(world, value); };
    // The Feed lives as long as the function handed out: rank 0's coordinator answers until every other
    // rank has been told that nothing is left, and the engine drops the function before its last barrier
    // (a barrier holds the MPI lock the coordinator needs).
    team.feed = [world](int bands) {
        auto feed = std::make_shared<Feed>(world, std::size_t(bands));
        return std::function<std::optional<int>()>([feed]() -> std::optional<int> {
            const std::optional<std::size_t> k = feed->next();
            return k ? std::optional<int>(int(*k)) : std::nullopt;
        });
    };
    team.abort = [world](const std::string& error) {
        std::fprintf(stderr, "apron: %s\n", error.c_str());
        abort_world(world, 1);
    };
    return team;
}

} // namespace apron::dist

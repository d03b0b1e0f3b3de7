// MPI for `apron batch` (see mpi_batch.hpp). Every MPI call of the process goes through one mutex, which is
// what MPI_THREAD_SERIALIZED asks of the caller: reader threads of any rank ask for work, rank 0's
// coordinator thread answers, the main thread starts, synchronises and reduces.
#include "core/overrides.hpp"
#include "dist/mpi_batch.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apron/errors.hpp"

#if APRON_HAVE_MPI
#include <mpi.h>
#endif

namespace apron::dist {

#if APRON_HAVE_MPI
namespace {

std::mutex& mpi_mutex() {
    static std::mutex m;
    return m;
}

constexpr int tag_request = 701, tag_reply = 702;

bool launched_by_mpi() { return environment_settings().mpi_launched; }

void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(rc, text, &n);
        throw Error(std::string("mpi: ") + what + ": " + std::string(text, std::size_t(n)));
    }
}

} // namespace

World start_world(int* argc, char*** argv) {
    World w;
    if (!launched_by_mpi()) return w;
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw Error("mpi: the MPI library gives thread level " + std::to_string(provided) +
                    ", apron batch needs MPI_THREAD_SERIALIZED");
    }
    w.active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node), "node ranks");
    MPI_Comm_rank(node, &w.local_rank);
    MPI_Comm_size(node, &w.local_size);
    MPI_Comm_free(&node);
    return w;
}

void finish_world(const World& world) {
    if (!world.active) return;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    MPI_Finalize();
}

void abort_world(const World& world, int code) {
    if (world.active) MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
}

void barrier(const World& world) {
    if (!world.active) return;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

int broadcast_from_root(const World& world, int value) {
    if (!world.active) return value;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check(MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return value;
}

std::uint64_t broadcast_from_root(const World& world, std::uint64_t value) {
    if (!world.active) return value;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    check(MPI_Bcast(&value, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return value;
}

struct Feed::State {
    World world;
    std::size_t n = 0;
    std::mutex mutex;             // the local counter (rank 0) or the exhausted flag (others)
    std::size_t counter = 0;
    bool exhausted = false;
    std::thread coordinator;
    std::atomic<bool> failed = false;

    std::optional<std::size_t> take() {
        std::lock_guard<std::mutex> lock(mutex);
        if (counter >= n) return std::nullopt;
        return counter++;
    }

    // Rank 0: answers every other rank's requests until each has been told that nothing is left. Polls
    // (MPI_Iprobe, then a short sleep) rather than blocking in MPI_Recv, which would hold the MPI mutex
    // and, in Open MPI, spin a core.
    void coordinate() {
        int told_done = 0;
        while (told_done < world.size - 1) {
            int flag = 0;
            MPI_Status status;
            {
                std::lock_guard<std::mutex> lock(mpi_mutex());
                MPI_Iprobe(MPI_ANY_SOURCE, tag_request, MPI_COMM_WORLD, &flag, &status);
                if (flag) {
                    int ask = 0;
                    MPI_Recv(&ask, 1, MPI_INT, status.MPI_SOURCE, tag_request, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    const std::optional<std::size_t> i = take();
                    long long reply = i ? static_cast<long long>(*i) : -1;
                    MPI_Send(&reply, 1, MPI_LONG_LONG, status.MPI_SOURCE, tag_reply, MPI_COMM_WORLD);
                    if (!i) ++told_done;
                }
            }
            if (!flag) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    std::optional<std::size_t> ask_rank0() {
        std::lock_guard<std::mutex> lock(mutex);  // one question at a time from this rank
        if (exhausted) return std::nullopt;
        long long reply = -1;
        {
            std::lock_guard<std::mutex> mpi(mpi_mutex());
            int ask = 1;
            check(MPI_Send(&ask, 1, MPI_INT, 0, tag_request, MPI_COMM_WORLD), "asking rank 0 for work");
            check(MPI_Recv(&reply, 1, MPI_LONG_LONG, 0, tag_reply, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "waiting for rank 0");
        }
        if (reply < 0) {
            exhausted = true;
            return std::nullopt;
        }
        return std::size_t(reply);
    }
};

Feed::Feed(const World& world, std::size_t n) : state_(std::make_unique<State>()) {
    state_->world = world;
    state_->n = n;
    if (world.active && world.rank == 0 && world.size > 1) state_->coordinator = std::thread([s = state_.get()] { s->coordinate(); });
}

Feed::~Feed() {
    if (state_->coordinator.joinable()) state_->coordinator.join();
}

std::optional<std::size_t> Feed::next() {
    if (!state_->world.active || state_->world.rank == 0) return state_->take();
    return state_->ask_rank0();
}

BatchReport reduce_reports(const World& world, const BatchReport& mine) {
    if (!world.active) return mine;
    std::lock_guard<std::mutex> lock(mpi_mutex());
    BatchReport total = mine;
    std::vector<unsigned long long> counts = {mine.done, mine.skipped, mine.failed, mine.pixels, mine.bytes_in, mine.bytes_out};
    std::vector<unsigned long long> sums(counts.size());
    check(MPI_Allreduce(counts.data(), sums.data(), int(counts.size()), MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD),
          "adding up the reports");
    std::vector<double> seconds;
    for (const auto& [stage, s] : mine.stage_seconds) seconds.push_back(s);
    std::vector<double> seconds_sum(seconds.size());
    check(MPI_Reduce(seconds.data(), seconds_sum.data(), int(seconds.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD),
          "adding up the stage times");
    double wall = 0;
    check(MPI_Reduce(&mine.seconds, &wall, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD), "the slowest rank");

    // Failures: "input\tmessage\n" lines gathered at rank 0.
    std::string text;
    auto clean = [](std::string s) {
        for (char& c : s)
            if (c == '\t' || c == '\n') c = ' ';
        return s;
    };
    for (const auto& f : mine.failures) text += clean(f.input) + '\t' + clean(f.message) + '\n';
    int length = int(text.size());
    std::vector<int> lengths(std::size_t(world.size)), offsets(std::size_t(world.size));
    check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "gathering failures");
    std::string all;
    if (world.rank == 0) {
        int at = 0;
        for (int r = 0; r < world.size; ++r) offsets[std::size_t(r)] = at, at += lengths[std::size_t(r)];
        all.resize(std::size_t(at));
    }
    check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                      MPI_COMM_WORLD),
          "gathering failures");

    total.done = sums[0], total.skipped = sums[1], total.failed = sums[2];
    total.pixels = sums[3], total.bytes_in = sums[4], total.bytes_out = sums[5];
    if (world.rank != 0) return total;
    total.seconds = wall;
    for (std::size_t i = 0; i < seconds_sum.size(); ++i) total.stage_seconds[i].second = seconds_sum[i];
    total.failures.clear();
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = all.find('\n', at), tab = all.find('\t', at);
        total.failures.push_back({all.substr(at, tab - at), all.substr(tab + 1, end - tab - 1)});
        at = end + 1;
    }
    return total;
}

#else  // built without MPI: one process

World start_world(int*, char***) { return {}; }
void finish_world(const World&) {}
void abort_world(const World&, int code) { std::exit(code); }
void barrier(const World&) {}
int broadcast_from_root(const World&, int value) { return value; }
std::uint64_t broadcast_from_root(const World&, std::uint64_t value) { return value; }

struct Feed::State {
    std::atomic<std::size_t> counter = 0;
    std::size_t n = 0;
};

Feed::Feed(const World&, std::size_t n) : state_(std::make_unique<State>()) { state_->n = n; }
Feed::~Feed() = default;

std::optional<std::size_t> Feed::next() {
    const std::size_t i = state_->counter++;
    return i < state_->n ? std::optional(i) : std::nullopt;
}

BatchReport reduce_reports(const World&, const BatchReport& mine) { return mine; }

#endif

// Both with MPI and without.

void check_launch(const World& world) {
    for (const char* name : {"SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
        const char* value = std::getenv(name);
        if (!value || !*value) continue;
        char* end = nullptr;
        const long tasks = std::strtol(value, &end, 10);
        if (*end || tasks <= 1 || tasks == world.size) continue;
        throw Error(std::string("launched as one of ") + std::to_string(tasks) + " tasks (" + name + "=" + value +
                    "), but MPI sees " + (world.active ? std::to_string(world.size) + " processes" : std::string("this one alone")) +
                    ": every task would do the whole job. Use srun --mpi=pmix (or mpirun) with an apron built with "
                    "MPI, or run one task (docs/cluster.md)");
    }
}

void check_same_items(const World& world, const std::vector<std::string>& names) {
    if (!world.active || world.size < 2) return;
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the names, each ended by a 0 byte
    for (const std::string& name : names) {
        for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
        h = (h ^ 0) * 0x100000001b3ull;
    }
    const std::uint64_t count = broadcast_from_root(world, std::uint64_t(names.size()));
    const std::uint64_t root = broadcast_from_root(world, h);
    if (count == names.size() && root == h) return;
    std::fprintf(stderr,
                 "apron: rank %d resolved %zu inputs, rank 0 %llu%s: the inputs changed while the ranks started "
                 "(a folder or glob read by each rank); run again once they are complete\n",
                 world.rank, names.size(), static_cast<unsigned long long>(count),
                 count == names.size() ? " (other names or order)" : "");
    abort_world(world, 1);
}

} // namespace apron::dist

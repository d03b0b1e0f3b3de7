// A batch's input read and its result written, stage by stage (file_stages.hpp).
#include "batch/file_stages.hpp"

#include <chrono>
#include <span>
#include <vector>

#include "batch/manifest.hpp"
#include "batch/pnm_in_place.hpp"

namespace apron::batch {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

} // namespace

HostBuffer read_input(const io::InputFile& file, bool pinned, InputFacts& facts, StageClock& clock) {
    HostBuffer bytes;
    {
        StageTimer t(clock, Stage::pin);
        bytes = HostBuffer(std::size_t(file.size()), pinned);
    }
    const auto start = Clock::now();
    double hashing = 0;
    std::uint32_t crc = crc32_start();
    file.read_all_into(std::span<std::uint8_t>(bytes.data(), bytes.size()), [&](std::span<const std::uint8_t> piece) {
        const auto h = Clock::now();
        crc = crc32_update(crc, piece);
        hashing += seconds_since(h);
    });
    clock.add(Stage::read, seconds_since(start) - hashing);
    clock.add(Stage::hash, hashing);
    clock.add_bytes(Stage::read, bytes.size());
    facts = {bytes.size(), file.mtime_ns(), crc};
    return bytes;
}

std::pair<std::uint64_t, std::uint32_t> write_output(const std::string& path, ImageView kept, const WriteOptions& options,
                                                     ImageMetadata metadata, bool hashed, StageClock& clock) {
    std::uint32_t crc = crc32_start();
    if (writes_pnm_in_place(path, options, kept.shape)) {
        const auto start = Clock::now();
        double hashing = 0;
        const std::uint64_t size = write_pnm_in_place(path, kept, [&](std::span<const std::uint8_t> chunk) {
            if (!hashed) return;
            const auto h = Clock::now();
            crc = crc32_update(crc, chunk);
            hashing += seconds_since(h);
        });
        clock.add(Stage::write, seconds_since(start) - hashing);
        clock.add(Stage::hash, hashing);
        clock.add_bytes(Stage::write, size);
        return {size, hashed ? crc : 0};
    }
    std::vector<std::uint8_t> file;
    {
        StageTimer t(clock, Stage::encode);
        WriteOptions write = options;
        write.metadata = std::move(metadata);
        file = encode_image(format_for_path(path), as_const(kept), path, write);
    }
    if (hashed) {
        StageTimer t(clock, Stage::hash);
        crc = crc32_update(crc, file);
    }
    StageTimer t(clock, Stage::write);
    write_file_atomically(path, file);
    clock.add_bytes(Stage::write, file.size());
    return {file.size(), hashed ? crc : 0};
}

} // namespace apron::batch

#include "batch/image_header.hpp"

#include <cstdint>
#include <span>

#include "apron/errors.hpp"

namespace apron::batch {

std::optional<ImageShape> shape_from_header(const io::InputFile& file, const ReadOptions& read) {
    ReadOptions shape_only = read;
    shape_only.memory_budget = 0;  // the batch charges its own budget with the answer
    // 64 KiB holds nearly every header; a JPEG's metadata segments (ICC profiles, thumbnails) can push its
    // frame header further, so one longer look before giving up.
    for (const std::size_t head_bytes : {std::size_t(1) << 16, std::size_t(4) << 20}) {
        const std::string head = file.read_at(0, head_bytes);
        try {
            return probe_image(std::span(reinterpret_cast<const std::uint8_t*>(head.data()), head.size()),
                               file.path(), shape_only);
        } catch (const Error&) {
            if (head.size() >= file.size()) break;  // the whole file: the header itself is wrong
        }
    }
    return std::nullopt;
}

} // namespace apron::batch

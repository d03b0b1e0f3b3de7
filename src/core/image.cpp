#include "apron/image.hpp"
#include "core/host_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "apron/errors.hpp"

namespace apron {

const char* to_string(PixelType t) {
    switch (t) {
    case PixelType::u8: return "u8";
    case PixelType::u16: return "u16";
    case PixelType::f32: return "f32";
    }
    return "?";
}

std::optional<PixelType> parse_pixel_type(std::string_view name) {
    if (name == "u8" || name == "uint8") return PixelType::u8;
    if (name == "u16" || name == "uint16") return PixelType::u16;
    if (name == "f32" || name == "float32" || name == "float") return PixelType::f32;
    return std::nullopt;
}

void validate_shape(const ImageShape& s, const char* what) {
    if (s.width <= 0 || s.height <= 0)
        fail(what, "image size " + std::to_string(s.width) + "x" + std::to_string(s.height) + " is not positive");
    if (s.channels < 1 || s.channels > max_channels)
        fail(what, std::to_string(s.channels) + " channels (apron supports 1 to 4)");
    if (s.depth < 1) fail(what, "depth " + std::to_string(s.depth) + " is not positive");
    const std::uint64_t limit = std::numeric_limits<std::size_t>::max() / 8;
    if (std::uint64_t(s.rows()) > std::uint64_t(std::numeric_limits<int>::max()))
        fail(what, "volume of " + std::to_string(s.rows()) + " rows (height x depth) is more than 2^31 - 1 rows");
    if (std::uint64_t(s.width) * s.channels * bytes_per_sample(s.type) * std::uint64_t(s.rows()) > limit)
        fail(what, "image too large for this machine's address space");
}

template <class Byte>
BasicImageView<Byte> BasicImageView<Byte>::roi(int x, int y, int w, int h) const {
    if (shape.depth > 1) fail("roi", "of a volume (take a plane first: its planes follow one another every height rows)");
    if (x < 0 || y < 0 || w <= 0 || h <= 0 || x + w > shape.width || y + h > shape.height)
        fail("roi", "rectangle " + std::to_string(w) + "x" + std::to_string(h) + "+" + std::to_string(x) + "+" +
                        std::to_string(y) + " does not fit in a " + std::to_string(shape.width) + "x" +
                        std::to_string(shape.height) + " image");
    BasicImageView r = *this;
    r.data = data + std::size_t(y) * pitch + std::size_t(x) * shape.channels * bytes_per_sample(shape.type);
    r.shape.width = w;
    r.shape.height = h;
    return r;
}
template struct BasicImageView<std::byte>;
template struct BasicImageView<const std::byte>;

void Image::FreeAligned::operator()(std::byte* p) const {
    if (pinned)
        free_pinned(p);
    else
        std::free(p);
}

Image::Image(const ImageShape& shape, HostMemory memory) : shape_(shape) {
    validate_shape(shape, "image");
    pitch_ = (shape.row_bytes() + 63) / 64 * 64;
    const std::size_t bytes = pitch_ * std::size_t(shape.rows());
    std::byte* p = memory == HostMemory::pinned ? static_cast<std::byte*>(allocate_pinned(bytes)) : nullptr;
    const bool pinned = p != nullptr;
    if (!p) p = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
    if (!p) fail("image", "out of host memory allocating " + std::to_string(bytes) + " bytes");
    storage_ = std::unique_ptr<std::byte, FreeAligned>(p, FreeAligned{pinned});
}

Image copy_of(ConstImageView v) {
    Image out(v.shape);
    for (int y = 0; y < int(v.shape.rows()); ++y)
        std::memcpy(out.view().row_bytes(y), v.row_bytes(y), v.shape.row_bytes());
    return out;
}

} // namespace apron

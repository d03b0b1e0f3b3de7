// Binary PNM read and written where the pixels lie (pnm_in_place.hpp).
#include "batch/pnm_in_place.hpp"

#include <bit>
#include <vector>

#include "io/codecs.hpp"
#include "io/file_io.hpp"

namespace apron::batch {
namespace {

bool is_binary_pnm(std::span<const std::uint8_t> file) {
    return file.size() >= 2 && file[0] == 'P' && (file[1] == '5' || file[1] == '6' || file[1] == '7');
}

}  // namespace

std::optional<ImageView> pnm_in_place(std::span<std::uint8_t> file, const std::string& name, const ReadOptions& options) {
    static_assert(std::endian::native == std::endian::little, "16-bit samples are swapped for a little-endian host");
    if (!is_binary_pnm(file)) return std::nullopt;
    const io::MemorySource source(file);
    io::FixedRows rows;
    try {
        rows = io::pnm_fixed_rows(source, name, options);
    } catch (const Error&) {
        return std::nullopt;  // the decoder refuses it, in the words every other path uses
    }
    if (rows.bottom_up) return std::nullopt;
    const ImageShape& s = rows.shape;
    ImageView view{reinterpret_cast<std::byte*>(file.data() + rows.data_offset), s, s.row_bytes(), Memory::host};
    if (s.type == PixelType::u16 && rows.byte_order == ByteOrder::big)
        io::swap_bytes_16(file.data() + rows.data_offset, std::size_t(s.row_bytes()) / 2 * std::size_t(s.height));
    if (rows.maxval) io::check_pnm_samples(name, as_const(view), 0, rows.maxval);
    return view;
}

bool writes_pnm_in_place(const std::string& path, const WriteOptions& options, const ImageShape& shape) {
    return format_for_path(path) == ImageFormat::pnm && !options.pnm_ascii &&
           (shape.type == PixelType::u8 || shape.type == PixelType::u16) && (shape.channels == 1 || shape.channels == 3);
}

std::uint64_t write_pnm_in_place(const std::string& path, ImageView image,
                                 const std::function<void(std::span<const std::uint8_t>)>& before_each) {
    const bool wide = image.type() == PixelType::u16;
    const std::string header = io::pnm_header(image.shape, false);
    const std::size_t row = image.shape.row_bytes();
    std::vector<std::span<const std::uint8_t>> pieces;
    pieces.emplace_back(reinterpret_cast<const std::uint8_t*>(header.data()), header.size());
    auto* first = reinterpret_cast<std::uint8_t*>(image.data);
    if (image.pitch == row) {
        pieces.emplace_back(first, row * std::size_t(image.height()));
    } else {
        for (int y = 0; y < image.height(); ++y) pieces.emplace_back(first + image.pitch * std::size_t(y), row);
    }
    if (wide)
        for (int y = 0; y < image.height(); ++y) io::swap_bytes_16(first + image.pitch * std::size_t(y), row / 2);
    io::write_pieces_atomically(path, pieces, before_each);
    return header.size() + row * std::uint64_t(image.height());
}

} // namespace apron::batch

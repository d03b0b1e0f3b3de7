// PFM (portable float map): "Pf" (1 channel) or "PF" (3 channels), then width height, then a scale whose
// sign gives the byte order (negative: little-endian, positive: big-endian; its magnitude is ignored), one
// whitespace byte, and 32-bit floats with the rows stored bottom to top. Written little-endian, scale -1.
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include "io/codecs.hpp"
#include "io/text_header.hpp"

namespace apron::io {

namespace {

struct PfmHeader {
    int channels = 1;
    std::uint64_t width = 0, height = 0;
    bool little_endian = true;
};

// The header up to the single whitespace byte before the pixels, which then start at h.pos().
PfmHeader parse_header(TextHeader& h, Bytes bytes, const std::string& name, const ReadOptions& options) {
    if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != 'f' && bytes[1] != 'F'))
        h.malformed("not a PFM file (expected Pf or PF)");
    PfmHeader p;
    p.channels = bytes[1] == 'F' ? 3 : 1;
    h.skip(2);
    p.width = h.number("width");
    p.height = h.number("height");

    const std::string scale_text(h.token("scale"));
    // from_chars, unlike strtod, ignores the locale (a German locale would otherwise want "-1,0").
    const char* first = scale_text.data();
    const char* last = first + scale_text.size();
    if (first != last && *first == '+') ++first;
    double scale = 0;
    const auto [end, error] = std::from_chars(first, last, scale);
    if (error != std::errc() || end != last) h.malformed("the scale '" + scale_text + "' is not a number");
    if (!std::isfinite(scale) || scale == 0)
        h.malformed("the scale " + scale_text + " must be a finite, non-zero number (its sign gives the byte order)");
    p.little_endian = scale < 0;
    h.end_of_header();
    check_size(name, p.width, p.height, options);
    return p;
}

}  // namespace

Image decode_pfm(Bytes bytes, const std::string& name, const ReadOptions& options) {
    TextHeader h(bytes, name, "PFM");
    const PfmHeader p = parse_header(h, bytes, name, options);
    const std::uint64_t pixels = p.width * p.height;
    const std::size_t bytes_per_pixel = 4 * std::size_t(p.channels);
    if (h.remaining() / bytes_per_pixel < pixels) h.truncated("pixel data");

    Image img = allocate_image(name, p.width, p.height, p.channels, PixelType::f32, options, {bytes.size(), 0});
    const std::size_t row_bytes = img.shape().row_bytes();
    const bool swap = p.little_endian != (std::endian::native == std::endian::little);
    const std::uint8_t* src = h.rest().data();
    for (int r = 0; r < img.height(); ++r, src += row_bytes) {
        auto* dst = reinterpret_cast<std::uint8_t*>(img.view().row_bytes(img.height() - 1 - r));
        std::memcpy(dst, src, row_bytes);
        if (swap) swap_bytes_32(dst, row_bytes / 4);
    }
    return img;
}

ImageShape probe_pfm(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    const PfmHeader p = parse_from_prefix(source, [&](Bytes prefix) {
        TextHeader h(prefix, name, "PFM");
        const PfmHeader header = parse_header(h, prefix, name, options);
        return std::pair{header, h.pos()};
    });
    // Rows are read straight from a file (the decoder below): only a file decoded from memory is held.
    return check_image(name, p.width, p.height, p.channels, PixelType::f32, options,
                       {source.memory().empty() ? 0 : source.size(), 0});
}

Image decode_pfm(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    std::uint64_t offset = 0;
    const PfmHeader p = parse_from_prefix(source, [&](Bytes prefix) {
        TextHeader h(prefix, name, "PFM");
        const PfmHeader header = parse_header(h, prefix, name, options);
        offset = h.pos();
        return std::pair{header, h.pos()};
    });
    // decode_pfm's refusal of a file too short for its promised size, in its words, before allocating.
    if ((source.size() - std::min(source.size(), offset)) / (4 * std::uint64_t(p.channels)) < p.width * p.height)
        fail(name, "truncated PFM file (ends before the pixel data)");
    Image img = allocate_image(name, p.width, p.height, p.channels, PixelType::f32, options, {0, 0});
    FixedRows r;
    r.shape = img.shape();
    r.data_offset = offset;
    r.bottom_up = true;
    r.byte_order = p.little_endian ? ByteOrder::little : ByteOrder::big;
    read_fixed_rows(source, name, r, 0, img.view(), io_threads_for_whole_images());
    return img;
}

FixedRows pfm_fixed_rows(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    std::uint64_t offset = 0;
    const PfmHeader p = parse_from_prefix(source, [&](Bytes prefix) {
        TextHeader h(prefix, name, "PFM");
        const PfmHeader header = parse_header(h, prefix, name, options);
        offset = h.pos();
        return std::pair{header, h.pos()};
    });
    FixedRows r;
    r.shape = check_image(name, p.width, p.height, p.channels, PixelType::f32, options, {0, 0});
    r.data_offset = offset;
    r.bottom_up = true;
    r.byte_order = p.little_endian ? ByteOrder::little : ByteOrder::big;
    if (source.size() - std::min(source.size(), offset) < std::uint64_t(r.shape.row_bytes()) * r.shape.height)
        fail(name, "truncated PFM file: the header promises " + std::to_string(std::uint64_t(r.shape.row_bytes()) * r.shape.height) +
                       " bytes of pixels");
    return r;
}

Buffer encode_pfm(ConstImageView image, const std::string&, const WriteOptions&) {
    const std::string header = std::string(image.channels() == 3 ? "PF" : "Pf") + "\n" + std::to_string(image.width()) +
                               " " + std::to_string(image.height()) + "\n-1\n";
    const std::size_t row_bytes = image.shape.row_bytes();
    Buffer out(header.begin(), header.end());
    out.reserve(header.size() + row_bytes * image.height());
    for (int y = image.height() - 1; y >= 0; --y) {
        const auto* src = reinterpret_cast<const std::uint8_t*>(image.row_bytes(y));
        const std::size_t at = out.size();
        out.insert(out.end(), src, src + row_bytes);
        if constexpr (std::endian::native == std::endian::big) swap_bytes_32(out.data() + at, row_bytes / 4);
    }
    return out;
}

}  // namespace apron::io

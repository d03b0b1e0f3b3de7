// Image shapes from file headers (see image_header.hpp). Every field is bounds-checked against what was
// read; nothing here throws for a malformed file (that is the decoder's to report, with its reasons).
#include "batch/image_header.hpp"

#include <cstdint>
#include <string>
#include <string_view>

#include "apron/errors.hpp"
#include "io/text_header.hpp"

namespace apron::batch {

namespace {

constexpr std::size_t kHead = 4096;

std::uint32_t be16(std::string_view s, std::size_t at) {
    return std::uint32_t(std::uint8_t(s[at])) << 8 | std::uint8_t(s[at + 1]);
}
std::uint32_t be32(std::string_view s, std::size_t at) { return be16(s, at) << 16 | be16(s, at + 2); }

std::optional<ImageShape> shape(std::uint64_t w, std::uint64_t h, int channels, PixelType type) {
    if (w == 0 || h == 0 || w > 0x7fffffff || h > 0x7fffffff || channels < 1 || channels > 4) return std::nullopt;
    return ImageShape{int(w), int(h), channels, type};
}

// P1-P7 and Pf/PF: the text header, read by the decoders' own tokenizer.
std::optional<ImageShape> netpbm(std::string_view head) {
    const io::Bytes bytes(reinterpret_cast<const std::uint8_t*>(head.data()), head.size());
    const std::string name = "header";  // TextHeader keeps a reference to it
    io::TextHeader h(bytes, name, "PNM");
    const char kind = head[1];
    h.skip(2);
    if (kind == 'f' || kind == 'F') {
        const std::uint64_t w = h.number("width"), ht = h.number("height");
        return shape(w, ht, kind == 'F' ? 3 : 1, PixelType::f32);
    }
    if (kind == '7') {
        std::uint64_t w = 0, ht = 0, depth = 0, maxval = 0;
        for (int lines = 0; lines < 64; ++lines) {
            const std::string_view key = h.token("ENDHDR");
            if (key == "ENDHDR") return shape(w, ht, int(depth), maxval > 255 ? PixelType::u16 : PixelType::u8);
            if (key == "WIDTH") w = h.number("width");
            else if (key == "HEIGHT") ht = h.number("height");
            else if (key == "DEPTH") depth = h.number("depth");
            else if (key == "MAXVAL") maxval = h.number("maxval");
            else h.token("value", 4096);  // TUPLTYPE and the like
        }
        return std::nullopt;
    }
    const std::uint64_t w = h.number("width"), ht = h.number("height");
    const std::uint64_t maxval = (kind == '1' || kind == '4') ? 1 : h.number("maxval");
    return shape(w, ht, (kind == '3' || kind == '6') ? 3 : 1, maxval > 255 ? PixelType::u16 : PixelType::u8);
}

// The IHDR chunk, first after the signature.
std::optional<ImageShape> png(std::string_view head) {
    if (head.size() < 26 || head.substr(12, 4) != "IHDR") return std::nullopt;
    const std::uint32_t w = be32(head, 16), h = be32(head, 20);
    const int depth = std::uint8_t(head[24]), color = std::uint8_t(head[25]);
    const int channels = color == 0 ? 1 : color == 2 ? 3 : color == 4 ? 2 : (color == 3 || color == 6) ? 4 : 0;
    return shape(w, h, channels, depth == 16 ? PixelType::u16 : PixelType::u8);
}

// Segment by segment to the frame header (SOFn): APPn segments (EXIF, ICC profiles) may come first.
std::optional<ImageShape> jpeg(const InputFile& file) {
    std::uint64_t at = 2;
    for (int segments = 0; segments < 1000; ++segments) {
        const std::string s = file.read_at(at, 10);
        if (s.size() < 4 || std::uint8_t(s[0]) != 0xFF) return std::nullopt;
        const int marker = std::uint8_t(s[1]);
        if (marker == 0xFF) {  // fill byte
            ++at;
            continue;
        }
        const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (sof) {
            if (s.size() < 10) return std::nullopt;
            const int components = std::uint8_t(s[9]);
            return shape(be16(s, 7), be16(s, 5), components == 1 ? 1 : components == 3 ? 3 : 4,
                         std::uint8_t(s[4]) > 8 ? PixelType::u16 : PixelType::u8);
        }
        if (marker == 0xDA || marker == 0xD9) return std::nullopt;  // scan data or the end before a frame
        at += 2 + be16(s, 2);
    }
    return std::nullopt;
}

// Classic TIFF: the first IFD's width, length, samples per pixel and bits per sample.
std::optional<ImageShape> tiff(const InputFile& file, std::string_view head) {
    const bool little = head[0] == 'I';
    auto u16 = [&](std::string_view s, std::size_t at) {
        return little ? std::uint32_t(std::uint8_t(s[at])) | std::uint32_t(std::uint8_t(s[at + 1])) << 8 : be16(s, at);
    };
    auto u32 = [&](std::string_view s, std::size_t at) {
        return little ? u16(s, at) | u16(s, at + 2) << 16 : be32(s, at);
    };
    if (head.size() < 8 || u16(head, 2) != 42) return std::nullopt;  // BigTIFF (43): not here
    const std::uint32_t ifd = u32(head, 4);
    const std::string count_bytes = file.read_at(ifd, 2);
    if (count_bytes.size() < 2) return std::nullopt;
    const std::uint32_t count = u16(count_bytes, 0);
    const std::string entries = file.read_at(ifd + 2, std::size_t(count) * 12);
    if (entries.size() < std::size_t(count) * 12) return std::nullopt;
    std::uint64_t w = 0, h = 0;
    int channels = 1, sample_bytes = 4;  // bits not inline (one per sample, 3-4 samples): the largest apron reads
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::size_t e = std::size_t(i) * 12;
        const std::uint32_t tag = u16(entries, e), type = u16(entries, e + 2), n = u32(entries, e + 4);
        const std::uint32_t value = type == 3 ? u16(entries, e + 8) : u32(entries, e + 8);  // SHORT or LONG
        if (tag == 256) w = value;
        else if (tag == 257) h = value;
        else if (tag == 277) channels = int(std::min<std::uint32_t>(value, 4));
        else if (tag == 258 && type == 3 && n <= 2) sample_bytes = value <= 8 ? 1 : value <= 16 ? 2 : 4;
    }
    if (sample_bytes == 1) return shape(w, h, channels, PixelType::u8);
    return shape(w, h, channels, sample_bytes == 2 ? PixelType::u16 : PixelType::f32);
}

} // namespace

std::optional<ImageShape> shape_from_header(const InputFile& file) {
    try {
        const std::string head = file.read_at(0, kHead);
        if (head.size() >= 2 && head[0] == 'P' &&
            ((head[1] >= '1' && head[1] <= '7') || head[1] == 'f' || head[1] == 'F'))
            return netpbm(head);
        if (head.size() >= 8 && head.substr(0, 8) == "\x89PNG\r\n\x1a\n") return png(head);
        if (head.size() >= 3 && head.substr(0, 3) == "\xFF\xD8\xFF") return jpeg(file);
        if (head.size() >= 4 && (head.substr(0, 2) == "II" || head.substr(0, 2) == "MM")) return tiff(file, head);
    } catch (const Error&) {
        // A header the decoder will refuse, with its reasons; nothing to reserve by.
    }
    return std::nullopt;
}

} // namespace apron::batch

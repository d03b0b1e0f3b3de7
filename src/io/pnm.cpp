// Netpbm: PBM (P1/P4), PGM (P2/P5), PPM (P3/P6) and PAM (P7, read only).
//
// Samples are kept as stored, not rescaled: a file with maxval <= 255 becomes u8, one with a larger maxval
// u16, whatever the exact maxval (so a 12-bit PGM with maxval 4095 reads as u16 values 0..4095). The one
// exception is PBM, whose bits (1 = black) become u8 0 (black) and 255 (white) so that it reads as an image.
// Binary samples wider than a byte are big-endian in the file (Netpbm's rule), native in memory; with
// ReadOptions::pnm_byte_order little they are read little-endian instead (GenConv writes 16-bit PGM so).
// Writing: 1 channel -> P5 (P2 with pnm_ascii), 3 channels -> P6 (P3); u8 with maxval 255, u16 with 65535.
#include <cstring>

#include "io/codecs.hpp"
#include "io/text_header.hpp"

namespace apron::io {

namespace {

struct PnmHeader {
    char kind = 0;  // the digit after 'P'
    std::uint64_t width = 0, height = 0, maxval = 0;
    int channels = 1;
};

void read_pam_header(TextHeader& h, PnmHeader& p) {
    std::uint64_t depth = 0;
    bool have_width = false, have_height = false, have_depth = false, have_maxval = false;
    for (;;) {
        const std::string_view key = h.token("ENDHDR line");
        if (key == "ENDHDR") break;
        if (key == "WIDTH")
            p.width = h.number("width"), have_width = true;
        else if (key == "HEIGHT")
            p.height = h.number("height"), have_height = true;
        else if (key == "DEPTH")
            depth = h.number("depth"), have_depth = true;
        else if (key == "MAXVAL")
            p.maxval = h.number("maxval"), have_maxval = true;
        else if (key == "TUPLTYPE") {
            // The tuple type is informative only (e.g. RGB_ALPHA); the depth says what we need.
            while (!h.at_end() && h.rest()[0] != '\n') h.skip(1);
        } else {
            h.malformed("unknown PAM header line '" + std::string(key) + "'");
        }
    }
    if (!have_width || !have_height || !have_depth || !have_maxval)
        h.malformed("the PAM header needs WIDTH, HEIGHT, DEPTH and MAXVAL");
    if (depth < 1 || depth > 4)
        h.malformed("PAM depth " + std::to_string(depth) + " is not supported (apron images have 1 to 4 channels)");
    p.channels = int(depth);
}

PnmHeader read_header(TextHeader& h) {
    PnmHeader p;
    if (h.remaining() < 2 || h.rest()[0] != 'P' || h.rest()[1] < '1' || h.rest()[1] > '7')
        h.malformed("not a Netpbm file (expected P1 to P7)");
    p.kind = char(h.rest()[1]);
    h.skip(2);
    if (p.kind == '7') {
        read_pam_header(h, p);
    } else {
        p.width = h.number("width");
        p.height = h.number("height");
        p.maxval = (p.kind == '1' || p.kind == '4') ? 1 : h.number("maxval");
        p.channels = (p.kind == '3' || p.kind == '6') ? 3 : 1;
    }
    if (p.maxval < 1 || p.maxval > 65535) h.malformed("maxval " + std::to_string(p.maxval) + " is outside 1..65535");
    return p;
}

[[noreturn]] void too_large_sample(const std::string& name, std::uint64_t v, std::uint64_t maxval, int x, int y) {
    fail(name, "sample value " + std::to_string(v) + " at pixel (" + std::to_string(x) + ", " + std::to_string(y) +
                   ") is larger than the maxval " + std::to_string(maxval));
}

// P5, P6, P7: samples of 1 or 2 bytes, big-endian unless `order` says otherwise.
void read_binary(TextHeader& h, const PnmHeader& p, Image& img, const std::string& name, ByteOrder order) {
    const bool wide = p.maxval > 255;
    const int high = order == ByteOrder::little ? 1 : 0;  // the byte holding the high 8 bits
    const std::size_t samples_per_row = std::size_t(img.width()) * p.channels;
    const std::uint8_t* src = h.rest().data();
    for (int y = 0; y < img.height(); ++y) {
        if (wide) {
            auto* dst = img.row<std::uint16_t>(y);
            for (std::size_t i = 0; i < samples_per_row; ++i, src += 2) {
                dst[i] = std::uint16_t(src[high] << 8 | src[1 - high]);
                if (dst[i] > p.maxval) too_large_sample(name, dst[i], p.maxval, int(i / p.channels), y);
            }
        } else {
            auto* dst = img.row<std::uint8_t>(y);
            std::memcpy(dst, src, samples_per_row);
            src += samples_per_row;
            if (p.maxval < 255)
                for (std::size_t i = 0; i < samples_per_row; ++i)
                    if (dst[i] > p.maxval) too_large_sample(name, dst[i], p.maxval, int(i / p.channels), y);
        }
    }
}

// P2, P3: decimal samples separated by whitespace.
template <class T>
void read_ascii(TextHeader& h, const PnmHeader& p, Image& img, const std::string& name) {
    const int samples_per_row = img.width() * p.channels;
    for (int y = 0; y < img.height(); ++y) {
        T* dst = img.row<T>(y);
        for (int i = 0; i < samples_per_row; ++i) {
            const std::uint64_t v = h.number("pixel data");
            if (v > p.maxval) too_large_sample(name, v, p.maxval, i / p.channels, y);
            dst[i] = T(v);
        }
    }
}

// P1 (one '0' or '1' per pixel, whitespace optional) and P4 (rows of packed bits, most significant first).
void read_bitmap(TextHeader& h, const PnmHeader& p, Image& img) {
    const std::uint8_t* packed = h.rest().data();
    const std::size_t packed_row = (std::size_t(img.width()) + 7) / 8;
    for (int y = 0; y < img.height(); ++y) {
        auto* dst = img.row<std::uint8_t>(y);
        for (int x = 0; x < img.width(); ++x) {
            bool black;
            if (p.kind == '4') {
                black = packed[std::size_t(y) * packed_row + std::size_t(x) / 8] >> (7 - x % 8) & 1;
            } else {
                h.skip_space_and_comments();
                if (h.at_end()) h.truncated("pixel data");
                const std::uint8_t c = h.rest()[0];
                if (c != '0' && c != '1') h.malformed("PBM pixels must be '0' or '1'");
                black = c == '1';
                h.skip(1);
            }
            dst[x] = black ? 0 : 255;
        }
    }
}

void append(Buffer& out, const std::string& s) { out.insert(out.end(), s.begin(), s.end()); }


PixelType type_of(const PnmHeader& p) { return p.maxval > 255 ? PixelType::u16 : PixelType::u8; }
bool is_ascii(const PnmHeader& p) { return p.kind == '1' || p.kind == '2' || p.kind == '3'; }

// The header up to the pixel data (which starts at h.pos() for the binary kinds).
PnmHeader parse_header(TextHeader& h, const std::string& name, const ReadOptions& options) {
    const PnmHeader p = read_header(h);
    check_size(name, p.width, p.height, options);
    if (!is_ascii(p)) h.end_of_header();
    return p;
}

}  // namespace

Image decode_pnm(Bytes bytes, const std::string& name, const ReadOptions& options) {
    TextHeader h(bytes, name, "PNM");
    const PnmHeader p = parse_header(h, name, options);
    const bool ascii = is_ascii(p);

    // Refuse a file too short for its promised size before allocating anything: a 20-byte file must not
    // make us allocate gigabytes. The data is `units` items of at least `unit_bytes` bytes each (an ASCII
    // sample takes at least one byte); dividing instead of multiplying keeps this free of overflow.
    std::uint64_t units = p.width * p.height, unit_bytes = std::uint64_t(p.channels);
    if (p.kind == '4')
        units = p.height, unit_bytes = (p.width + 7) / 8;
    else if (!ascii && p.maxval > 255)
        unit_bytes *= 2;
    if (h.remaining() / unit_bytes < units) h.truncated("pixel data");

    Image img = allocate_image(name, p.width, p.height, p.channels, type_of(p), options, {bytes.size(), 0});
    if (p.kind == '1' || p.kind == '4')
        read_bitmap(h, p, img);
    else if (!ascii)
        read_binary(h, p, img, name, options.pnm_byte_order);
    else if (p.maxval > 255)
        read_ascii<std::uint16_t>(h, p, img, name);
    else
        read_ascii<std::uint8_t>(h, p, img, name);
    return img;
}

// A binary file's rows are read straight from the file (decode_binary_pnm): only a file decoded from
// memory is held while it is decoded.
static std::uint64_t held_file_bytes(const ByteSource& source) { return source.memory().empty() ? 0 : source.size(); }

ImageShape probe_pnm(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    const PnmHeader p = parse_from_prefix(source, [&](Bytes prefix) {
        TextHeader h(prefix, name, "PNM");
        const PnmHeader header = parse_header(h, name, options);
        return std::pair{header, h.pos()};
    });
    const bool binary = !is_ascii(p) && p.kind != '4';
    return check_image(name, p.width, p.height, p.channels, type_of(p), options,
                       {binary ? held_file_bytes(source) : source.size(), 0});
}

Image decode_binary_pnm(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    std::uint64_t offset = 0;
    const PnmHeader p = parse_from_prefix(source, [&](Bytes prefix) {
        TextHeader h(prefix, name, "PNM");
        const PnmHeader header = parse_header(h, name, options);
        offset = h.pos();
        return std::pair{header, h.pos()};
    });
    if (is_ascii(p) || p.kind == '4') fail(name, "internal: decode_binary_pnm of a P" + std::string(1, p.kind) + " file");
    // decode_pnm's refusal of a file too short for its promised size, in its words, before allocating.
    const std::uint64_t unit_bytes = std::uint64_t(p.channels) * (p.maxval > 255 ? 2 : 1);
    if ((source.size() - std::min(source.size(), offset)) / unit_bytes < p.width * p.height)
        fail(name, "truncated PNM file (ends before the pixel data)");
    Image img = allocate_image(name, p.width, p.height, p.channels, type_of(p), options, {0, 0});
    FixedRows r;
    r.shape = img.shape();
    r.data_offset = offset;
    r.byte_order = options.pnm_byte_order;
    if (p.maxval != (r.shape.type == PixelType::u16 ? 65535u : 255u)) r.maxval = std::uint32_t(p.maxval);
    read_fixed_rows(source, name, r, 0, img.view(), io_threads_for_whole_images());
    return img;
}

void check_pnm_samples(const std::string& name, ConstImageView rows, int y0, std::uint32_t maxval) {
    const std::size_t samples = std::size_t(rows.width()) * rows.channels();
    for (int r = 0; r < rows.height(); ++r) {
        if (rows.type() == PixelType::u16) {
            const auto* v = reinterpret_cast<const std::uint16_t*>(rows.row_bytes(r));
            for (std::size_t i = 0; i < samples; ++i)
                if (v[i] > maxval) too_large_sample(name, v[i], maxval, int(i / rows.channels()), y0 + r);
        } else {
            const auto* v = reinterpret_cast<const std::uint8_t*>(rows.row_bytes(r));
            for (std::size_t i = 0; i < samples; ++i)
                if (v[i] > maxval) too_large_sample(name, v[i], maxval, int(i / rows.channels()), y0 + r);
        }
    }
}

FixedRows pnm_fixed_rows(const ByteSource& source, const std::string& name, const ReadOptions& options) {
    std::uint64_t offset = 0;
    const PnmHeader p = parse_from_prefix(source, [&](Bytes prefix) {
        TextHeader h(prefix, name, "PNM");
        const PnmHeader header = parse_header(h, name, options);
        offset = h.pos();
        return std::pair{header, h.pos()};
    });
    if (is_ascii(p) || p.kind == '4')
        fail(name, std::string("P") + p.kind + " files are read whole; rows are read straight from binary P5, P6 and P7 files only");
    FixedRows r;
    r.shape = check_image(name, p.width, p.height, p.channels, type_of(p), options, {0, 0});
    r.data_offset = offset;
    r.byte_order = options.pnm_byte_order;
    if (p.maxval != (r.shape.type == PixelType::u16 ? 65535u : 255u)) r.maxval = std::uint32_t(p.maxval);
    if (source.size() - std::min(source.size(), offset) < std::uint64_t(r.shape.row_bytes()) * r.shape.height)
        fail(name, "truncated PNM file: the header promises " + std::to_string(std::uint64_t(r.shape.row_bytes()) * r.shape.height) +
                       " bytes of pixels");
    return r;
}

std::string pnm_header(const ImageShape& shape, bool ascii) {
    const char kind = shape.channels == 1 ? (ascii ? '2' : '5') : (ascii ? '3' : '6');
    return std::string("P") + kind + "\n" + std::to_string(shape.width) + " " + std::to_string(shape.height) + "\n" +
           (shape.type == PixelType::u16 ? "65535" : "255") + "\n";
}

Buffer encode_pnm(ConstImageView image, const std::string&, const WriteOptions& options) {
    const bool wide = image.type() == PixelType::u16;
    Buffer out;
    append(out, pnm_header(image.shape, options.pnm_ascii));
    const std::size_t samples_per_row = std::size_t(image.width()) * image.channels();
    auto sample = [&](int y, std::size_t i) -> unsigned {
        return wide ? image.row<std::uint16_t>(y)[i] : image.row<std::uint8_t>(y)[i];
    };
    if (!options.pnm_ascii) {
        // Rows go in whole (batches write thousands of large PGM files): a copy per row for 8 bits, a
        // byte swap the compiler vectorises for 16 (Netpbm stores wide samples big-endian).
        const std::size_t row_bytes = samples_per_row * (wide ? 2 : 1);
        out.reserve(out.size() + std::size_t(image.height()) * row_bytes);
        for (int y = 0; y < image.height(); ++y) {
            if (!wide) {
                const std::uint8_t* src = image.row<std::uint8_t>(y);
                out.insert(out.end(), src, src + row_bytes);
                continue;
            }
            const std::size_t at = out.size();
            out.resize(at + row_bytes);
            const std::uint16_t* src = image.row<std::uint16_t>(y);
            for (std::size_t i = 0; i < samples_per_row; ++i) {
                out[at + 2 * i] = std::uint8_t(src[i] >> 8);
                out[at + 2 * i + 1] = std::uint8_t(src[i]);
            }
        }
        return out;
    }
    // Plain format: Netpbm asks for lines of at most 70 characters; each row starts a new line.
    for (int y = 0; y < image.height(); ++y) {
        std::size_t line = 0;
        for (std::size_t i = 0; i < samples_per_row; ++i) {
            const std::string v = std::to_string(sample(y, i));
            if (line > 0 && line + 1 + v.size() > 70) {
                out.push_back('\n');
                line = 0;
            } else if (line > 0) {
                out.push_back(' ');
                ++line;
            }
            append(out, v);
            line += v.size();
        }
        out.push_back('\n');
    }
    return out;
}

}  // namespace apron::io

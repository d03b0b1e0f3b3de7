// Row sources (row_stream.hpp): binary PNM/PAM, PFM, uncompressed FITS (fits.cpp) and raw samples read row
// by row with pread at fixed offsets; TIFF through libtiff a row of tiles or a strip at a time (tiff.cpp);
// non-interlaced PNG a row at a time (png_rows.cpp); other formats (interlaced PNG, JPEG, ASCII and bitmap
// PNM, tile-compressed FITS) decoded whole, within the memory budget, then handed out by rows.
#include <algorithm>
#include <bit>
#include <charconv>
#include <climits>
#include <cstring>

#include "apron/errors.hpp"
#include "core/usable_cores.hpp"
#include "io/codecs.hpp"
#include "io/file_io.hpp"
#include "io/parallel_parts.hpp"
#include "io/row_stream.hpp"

namespace apron::io {

RawLayout parse_raw_layout(const std::string& text, const std::string& what) {
    auto bad = [&](const std::string& why) -> RawLayout {
        fail(what, "'" + text + "': " + why +
                       " (expected WIDTHxHEIGHTxCHANNELS:TYPE[:little|big], e.g. 4096x4096x1:u16, or a volume's "
                       "WIDTHxHEIGHTxDEPTHxCHANNELS:TYPE, e.g. 1024x1024x256x1:u16)");
    };
    RawLayout r;
    const std::size_t colon = text.find(':');
    if (colon == std::string::npos) return bad("no pixel type");
    const std::string dims = text.substr(0, colon);
    std::string rest = text.substr(colon + 1);
    // Three numbers, or four (a volume: the depth third).
    const int n = int(std::count(dims.begin(), dims.end(), 'x')) == 3 ? 4 : 3;
    long long v[4] = {0, 0, 0, 0};
    std::size_t pos = 0;
    for (int k = 0; k < n; ++k) {
        const std::size_t end = k < n - 1 ? dims.find('x', pos) : dims.size();
        if (end == std::string::npos) return bad("the size needs three numbers (four for a volume)");
        const char* first = dims.data() + pos;
        const char* last = dims.data() + end;
        const auto [p, ec] = std::from_chars(first, last, v[k]);
        if (ec != std::errc() || p != last || first == last) {
            std::string field(first, last);  // named first: GCC 12 warns (-Wrestrict, falsely) on "'" + string(...)
            return bad(field.insert(0, 1, '\'') + "' is not a number");
        }
        pos = end + 1;
    }
    if (n == 4) {  // W x H x D x C: the depth moves out of the channels' place
        r.depth = 0;
        if (v[2] < 1 || v[1] * v[2] > (1LL << 31) - 1) return bad("the depth must be 1 or more, and height x depth at most 2^31-1");
        r.depth = int(v[2]);
        v[2] = v[3];
    }
    if (v[0] < 1 || v[1] < 1 || v[0] > (1LL << 31) - 1 || v[1] > (1LL << 31) - 1) return bad("width and height must be 1 to 2^31-1");
    if (v[2] < 1 || v[2] > max_channels) return bad("channels must be 1 to 4");
    v[1] *= r.depth;  // the file's rows: every plane's
    const std::size_t colon2 = rest.find(':');
    const std::string type = rest.substr(0, colon2);
    const auto t = parse_pixel_type(type);
    if (!t) return bad("'" + type + "' is not u8, u16 or f32");
    if (colon2 != std::string::npos) {
        const std::string order = rest.substr(colon2 + 1);
        if (order == "little") r.byte_order = ByteOrder::little;
        else if (order == "big") r.byte_order = ByteOrder::big;
        else return bad("'" + order + "' is not little or big");
    }
    r.shape = ImageShape{int(v[0]), int(v[1]), int(v[2]), *t};
    return r;
}

namespace {

constexpr ByteOrder native_order = std::endian::native == std::endian::little ? ByteOrder::little : ByteOrder::big;

void to_native(std::uint8_t* row, std::size_t bytes, PixelType type, ByteOrder stored) {
    if (stored == native_order || type == PixelType::u8) return;
    if (type == PixelType::u16) swap_bytes_16(row, bytes / 2);
    else swap_bytes_32(row, bytes / 4);
}

// Rows at fixed offsets of a file: binary PNM/PAM, PFM (bottom to top), raw samples.
class FixedRowsSource final : public RowSource {
public:
    const ImageShape& shape() const override { return layout_.shape; }
    const std::string& path() const override { return path_; }
    std::uint64_t buffer_bytes() const override { return 0; }
    FixedRowsSource(std::unique_ptr<ByteSource> file, std::string path, const FixedRows& layout, int threads)
        : file_(std::move(file)), path_(std::move(path)), layout_(layout), threads_(threads) {}
    void read_rows(int y0, ImageView band) override { read_fixed_rows(*file_, path_, layout_, y0, band, threads_); }

private:
    std::unique_ptr<ByteSource> file_;
    std::string path_;
    FixedRows layout_;
    int threads_ = 1;
};

// A format without row access here: decoded whole (within the budget read_image checks), then by rows.
class WholeImageSource final : public RowSource {
public:
    WholeImageSource(std::string path, Image image) : path_(std::move(path)), image_(std::move(image)) {}
    const ImageShape& shape() const override { return image_.shape(); }
    const std::string& path() const override { return path_; }
    std::uint64_t buffer_bytes() const override { return std::uint64_t(image_.pitch()) * image_.height(); }
    void read_rows(int y0, ImageView band) override {
        for (int r = 0; r < band.height(); ++r)
            std::memcpy(band.row_bytes(r), image_.view().row_bytes(y0 + r), band.shape.row_bytes());
    }

private:
    std::string path_;
    Image image_;
};

}  // namespace

int io_threads_for_whole_images() { return std::clamp(usable_cores(), 1, 8); }

void read_fixed_rows(const ByteSource& file, const std::string& name, const FixedRows& layout, int y0, ImageView band,
                     int threads) {
    const std::size_t row_bytes = layout.shape.row_bytes();
    const int H = layout.shape.height;
    // Rows stored top to bottom into a buffer without padding: one read for the whole part (a 64 KiB pread
    // per row costs a third of the read time on tmpfs). Otherwise one preadv of the part's rows, at most
    // IOV_MAX of them.
    const bool contiguous = !layout.bottom_up && std::size_t(band.pitch) == row_bytes;
    constexpr int max_scattered = 1024;  // IOV_MAX on Linux
    const int rows_per_part = int(std::clamp<std::size_t>((std::size_t(4) << 20) / std::max<std::size_t>(1, row_bytes), 1,
                                                          contiguous ? std::size_t(INT_MAX) : std::size_t(max_scattered)));
    const int parts = (band.height() + rows_per_part - 1) / rows_per_part;
    const bool swap = layout.byte_order != native_order && layout.shape.type != PixelType::u8;
    run_parts(parts, threads, [&](int k) {
        const int r0 = k * rows_per_part, n = std::min(rows_per_part, band.height() - r0), y = y0 + r0;
        // The part's rows lie at stored rows [s0, s0 + n) of the file (upside down in a bottom-up file).
        const std::uint64_t s0 = layout.bottom_up ? std::uint64_t(H - y - n) : std::uint64_t(y);
        const std::uint64_t at = layout.data_offset + s0 * row_bytes;
        const std::size_t bytes = row_bytes * std::size_t(n);
        std::size_t got = 0;
        if (contiguous) {
            got = file.read(at, band.row_bytes(r0), bytes);
        } else {
            iovec rows[max_scattered];
            for (int j = 0; j < n; ++j) rows[j] = {band.row_bytes(layout.bottom_up ? r0 + n - 1 - j : r0 + j), row_bytes};
            got = file.read_scattered(at, rows, n);
        }
        if (got != bytes)
            fail(name, (n > 1 ? "cannot read rows " + std::to_string(y) + "-" + std::to_string(y + n - 1)
                              : "cannot read row " + std::to_string(y)) +
                           ": the file is truncated or unreadable");
        if (swap) {
            if (contiguous) to_native(reinterpret_cast<std::uint8_t*>(band.row_bytes(r0)), bytes, layout.shape.type, layout.byte_order);
            else
                for (int r = r0; r < r0 + n; ++r)
                    to_native(reinterpret_cast<std::uint8_t*>(band.row_bytes(r)), row_bytes, layout.shape.type, layout.byte_order);
        }
        if (layout.offset_binary && layout.shape.type == PixelType::u16)
            for (int r = r0; r < r0 + n; ++r) {
                auto* v = reinterpret_cast<std::uint16_t*>(band.row_bytes(r));
                for (std::size_t i = 0; i < row_bytes / 2; ++i) v[i] ^= 0x8000;
            }
        if (layout.maxval) check_pnm_samples(name, as_const(band).roi(0, r0, band.width(), n), y, layout.maxval);
    });
}

std::unique_ptr<RowSource> open_row_source(const std::string& path, const SourceOptions& options) {
    ReadOptions read;
    read.max_pixels = options.max_pixels;
    read.pnm_byte_order = options.pnm_byte_order;
    read.memory_budget = 0;  // the streaming engine budgets the bands; only whole decodes check it (below)
    auto file = open_file_source(path);
    if (options.raw) {
        FixedRows layout;
        layout.shape = options.raw->shape;
        layout.byte_order = options.raw->byte_order;
        // The pixel limit first: it names the file, where an absurd layout is refused.
        check_size(path, std::uint64_t(layout.shape.width), std::uint64_t(layout.shape.height), read);
        validate_shape(layout.shape, "--raw");
        const std::uint64_t want = std::uint64_t(layout.shape.row_bytes()) * std::uint64_t(layout.shape.height);
        if (file->size() != want)
            fail(path, "raw file of " + std::to_string(file->size()) + " bytes, but --raw " + std::to_string(layout.shape.width) + "x" +
                           std::to_string(layout.shape.height) + "x" + std::to_string(layout.shape.channels) + ":" +
                           to_string(layout.shape.type) + " needs exactly " + std::to_string(want));
        return std::make_unique<FixedRowsSource>(std::move(file), path, layout, options.threads);
    }
    const Buffer magic = read_prefix(*file, 8);
    const bool pnm = magic.size() >= 2 && magic[0] == 'P' && magic[1] >= '5' && magic[1] <= '7';
    const bool pfm = magic.size() >= 2 && magic[0] == 'P' && (magic[1] == 'f' || magic[1] == 'F');
    const bool tiff = magic.size() >= 4 && ((magic[0] == 'I' && magic[1] == 'I' && magic[3] == 0 && (magic[2] == 42 || magic[2] == 43)) ||
                                            (magic[0] == 'M' && magic[1] == 'M' && magic[2] == 0 && (magic[3] == 42 || magic[3] == 43)));
    if (pnm) {
        const FixedRows layout = pnm_fixed_rows(*file, path, read);
        return std::make_unique<FixedRowsSource>(std::move(file), path, layout, options.threads);
    }
    if (pfm) {
        const FixedRows layout = pfm_fixed_rows(*file, path, read);
        return std::make_unique<FixedRowsSource>(std::move(file), path, layout, options.threads);
    }
    if (tiff) return open_tiff_rows(std::move(file), path, read);
    static constexpr std::uint8_t fits_signature[8] = {'S', 'I', 'M', 'P', 'L', 'E', ' ', ' '};
    if (magic.size() == 8 && std::equal(magic.begin(), magic.end(), fits_signature))
        if (auto rows = open_fits_rows(std::move(file), path, read, options.threads)) return rows;  // null: tile-compressed, decoded whole
    static constexpr std::uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (magic.size() == 8 && std::equal(magic.begin(), magic.end(), png_signature))
        if (auto rows = open_png_rows(std::move(file), path, read)) return rows;  // null: interlaced, decoded whole
    ReadOptions whole = read;
    whole.memory_budget = options.whole_decode_budget;
    return std::make_unique<WholeImageSource>(path, read_image(path, whole));
}

}  // namespace apron::io

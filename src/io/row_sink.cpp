// Row sinks (row_stream.hpp): an image written band by band into a partial file beside the target
// (".NAME.apron-partial", partial_file.hpp), renamed into place by commit(). The encoded formats, written in
// order, have files of their own (tiff_row_sink.cpp: compressed TIFF; png_rows.cpp: PNG). Every format here
// has fixed offsets for every row or tile, so bands may arrive in any order, from several threads or
// processes, and a resumed run can reopen the partial file and fill in what is missing:
//   .tif/.tiff  uncompressed tiled BigTIFF written by apron itself (header, one directory, then the tiles in
//               raster order, each a full tile as TIFF requires; edge tiles padded with zeros)
//   .pgm/.ppm/.pnm  binary P5/P6, 16-bit samples big-endian (Netpbm)
//   .pfm        rows bottom to top, little-endian
//   .raw        samples in this machine's byte order, no header
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

#include "apron/errors.hpp"
#include "io/codecs.hpp"
#include "io/metadata_places.hpp"
#include "io/file_io.hpp"
#include "io/output_target.hpp"
#include "io/parallel_parts.hpp"
#include "io/partial_file.hpp"
#include "io/row_stream.hpp"
#include "io/temporary_registry.hpp"

namespace apron::io {

std::string partial_path_for(const std::string& path) {
    const OutputTarget target = resolve_output(path);
    const std::size_t slash = target.path.find_last_of('/');
    const std::string base = slash == std::string::npos ? target.path : target.path.substr(slash + 1);
    if (base.empty()) fail(path, "cannot write: the path names a directory, not a file");
    return directory_of(target.path) + "/." + base.substr(0, std::min<std::size_t>(base.size(), 200)) + ".apron-partial";
}

namespace {

using detail::PartialFile;

std::string lower_extension(const std::string& path) {
    const std::size_t slash = path.find_last_of('/'), dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
    std::string e = path.substr(dot + 1);
    for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
    return e;
}

constexpr ByteOrder native_order = std::endian::native == std::endian::little ? ByteOrder::little : ByteOrder::big;

// A row in the file's byte order (a copy when it differs from this machine's).
const std::uint8_t* stored_row(const std::uint8_t* row, std::size_t bytes, PixelType type, ByteOrder order,
                               std::vector<std::uint8_t>& scratch) {
    if (order == native_order || type == PixelType::u8) return row;
    scratch.assign(row, row + bytes);
    if (type == PixelType::u16) swap_bytes_16(scratch.data(), bytes / 2);
    else swap_bytes_32(scratch.data(), bytes / 4);
    return scratch.data();
}

// PNM, PFM and raw: a text header (or none), then rows at fixed offsets.
class FixedRowsSink final : public RowSink {
public:
    FixedRowsSink(const std::string& path, const ImageShape& shape, std::string header, bool bottom_up, ByteOrder order,
                  const SinkOptions& options)
        : path_(path), shape_(shape), header_(std::move(header)), bottom_up_(bottom_up), order_(order),
          file_(path, header_.size() + std::uint64_t(shape.row_bytes()) * std::uint64_t(shape.height), options),
          threads_(std::max(1, options.threads)) {
        if (!header_.empty()) file_.write_at(0, header_.data(), header_.size(), "the header");
    }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return path_; }
    bool random_access() const override { return true; }
    int row_granularity() const override { return 1; }
    std::uint64_t buffer_bytes() const override { return std::uint64_t(shape_.row_bytes()) * std::uint64_t(threads_); }
    std::string partial_path() const override { return file_.partial(); }
    void sync() override { file_.sync(); }
    void commit() override { file_.commit(); }
    std::optional<StoredBytes> stored_bytes(int y0, int y1) const override {
        if (y0 < 0 || y1 > shape_.height || y0 >= y1) return std::nullopt;
        const std::uint64_t row_bytes = shape_.row_bytes();
        const std::uint64_t first = bottom_up_ ? std::uint64_t(shape_.height - y1) : std::uint64_t(y0);
        return StoredBytes{header_.size() + first * row_bytes, std::uint64_t(y1 - y0) * row_bytes};
    }
    bool read_back(std::uint64_t offset, void* data, std::size_t n) const override { return file_.read_at(offset, data, n); }
    void write_rows(int y0, ConstImageView band) override {
        // Parts of at least 4 MiB, written at once (pwrite has no state).
        const int rows_per_part = int(std::max<std::size_t>(1, (std::size_t(4) << 20) / std::max<std::size_t>(1, shape_.row_bytes())));
        const int parts = (band.height() + rows_per_part - 1) / rows_per_part;
        run_parts(parts, threads_, [&](int k) {
            const int r0 = k * rows_per_part;
            write_part(y0 + r0, band.roi(0, r0, band.width(), std::min(rows_per_part, band.height() - r0)));
        });
    }

private:
    void write_part(int y0, ConstImageView band) {
        const std::size_t row_bytes = shape_.row_bytes();
        // Rows stored top to bottom, in this machine's byte order, from a buffer without padding: one pwrite.
        const bool contiguous = !bottom_up_ && std::size_t(band.pitch) == row_bytes &&
                                (order_ == native_order || shape_.type == PixelType::u8);
        if (contiguous && band.height() > 0) {
            file_.write_at(header_.size() + std::uint64_t(y0) * row_bytes, band.row_bytes(0), row_bytes * std::size_t(band.height()),
                           "rows " + std::to_string(y0) + "-" + std::to_string(y0 + band.height() - 1));
            return;
        }
        std::vector<std::uint8_t> scratch;
        for (int r = 0; r < band.height(); ++r) {
            const int y = y0 + r;
            const std::uint64_t stored = bottom_up_ ? std::uint64_t(shape_.height - 1 - y) : std::uint64_t(y);
            const auto* row = reinterpret_cast<const std::uint8_t*>(band.row_bytes(r));
            file_.write_at(header_.size() + stored * row_bytes, stored_row(row, row_bytes, shape_.type, order_, scratch), row_bytes,
                           "row " + std::to_string(y));
        }
    }

    std::string path_;
    ImageShape shape_;
    std::string header_;
    bool bottom_up_;
    ByteOrder order_;
    PartialFile file_;
    int threads_ = 1;
};

// Uncompressed tiled BigTIFF with every tile at a fixed offset: the header and the one directory first,
// then the tile offsets and byte counts, then the tiles in raster order (a row of tiles is one pwrite).
class TiledTiffSink final : public RowSink {
public:
    TiledTiffSink(const std::string& path, const ImageShape& shape, const SinkOptions& options)
        : path_(path), shape_(shape), side_(options.tiff_tile_side), layout_(make_layout(path, shape, options.tiff_tile_side, options.metadata)),
          file_(path, layout_.file_bytes, options), threads_(std::max(1, options.threads)),
          // Runs of about 1 MiB of tiles: few syscalls, and parts enough for every thread on a band.
          run_tiles_(int(std::clamp<std::uint64_t>((std::uint64_t(1) << 20) / layout_.tile_bytes, 1, std::uint64_t(layout_.tiles_x)))) {
        file_.write_at(0, layout_.header.data(), layout_.header.size(), "the TIFF header");
    }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return path_; }
    bool random_access() const override { return true; }
    int row_granularity() const override { return side_; }
    std::uint64_t buffer_bytes() const override {
        std::lock_guard lock(mutex_);
        return layout_.tile_row_bytes * pending_.size() + std::uint64_t(threads_) * std::uint64_t(run_tiles_) * layout_.tile_bytes;
    }
    std::string partial_path() const override { return file_.partial(); }
    void sync() override { file_.sync(); }
    void commit() override { file_.commit(); }
    // Whole rows of tiles lie one after the other (their tiles in raster order).
    std::optional<StoredBytes> stored_bytes(int y0, int y1) const override {
        if (y0 < 0 || y1 > shape_.height || y0 >= y1 || y0 % side_ || (y1 % side_ && y1 != shape_.height)) return std::nullopt;
        const std::uint64_t ty0 = std::uint64_t(y0 / side_), ty1 = std::uint64_t((y1 + side_ - 1) / side_);
        return StoredBytes{layout_.data_offset + ty0 * layout_.tile_row_bytes, (ty1 - ty0) * layout_.tile_row_bytes};
    }
    bool read_back(std::uint64_t offset, void* data, std::size_t n) const override { return file_.read_at(offset, data, n); }

    void write_rows(int y0, ConstImageView band) override {
        // Whole rows of tiles come straight from the band; the rows of one the band cuts wait in pending_
        // until it is whole. Then every run of tiles of every whole row of tiles is a part, written at once.
        std::vector<TileRow> whole;
        std::vector<std::vector<std::uint8_t>> completed;  // pending rows now whole (their storage lives here)
        completed.reserve(std::size_t(band.height() / side_ + 2));
        for (int y = y0; y < y0 + band.height();) {
            const int ty = y / side_, row0 = ty * side_;
            const int rows_in_tile_row = std::min(side_, shape_.height - row0);
            const int n = std::min(y0 + band.height(), row0 + rows_in_tile_row) - y;
            if (y == row0 && n == rows_in_tile_row) {
                whole.push_back({ty, reinterpret_cast<const std::uint8_t*>(band.row_bytes(y - y0)), band.pitch});
            } else {
                std::lock_guard lock(mutex_);
                Pending& p = pending_[ty];
                if (p.rows.empty()) p.rows.assign(std::size_t(rows_in_tile_row) * shape_.row_bytes(), 0), p.have.assign(std::size_t(rows_in_tile_row), false);
                for (int r = 0; r < n; ++r) {
                    std::memcpy(p.rows.data() + std::size_t(y - row0 + r) * shape_.row_bytes(), band.row_bytes(y - y0 + r), shape_.row_bytes());
                    if (!p.have[std::size_t(y - row0 + r)]) p.have[std::size_t(y - row0 + r)] = true, ++p.count;
                }
                if (p.count == rows_in_tile_row) {
                    completed.push_back(std::move(p.rows));
                    pending_.erase(ty);
                    whole.push_back({ty, completed.back().data(), shape_.row_bytes()});
                }
            }
            y += n;
        }
        const int runs = (layout_.tiles_x + run_tiles_ - 1) / run_tiles_;
        run_parts(int(whole.size()) * runs, threads_, [&](int k) { write_tiles(whole[std::size_t(k / runs)], (k % runs) * run_tiles_); });
    }

private:
    struct Layout {
        std::vector<std::uint8_t> header;
        std::uint64_t data_offset = 0, tile_bytes = 0, tile_row_bytes = 0, file_bytes = 0;
        int tiles_x = 0, tiles_y = 0;
    };
    struct TileRow {  // a whole row of tiles: its first image row and the pitch of its rows
        int ty = 0;
        const std::uint8_t* first = nullptr;
        std::size_t pitch = 0;
    };
    struct Pending {
        std::vector<std::uint8_t> rows;
        std::vector<bool> have;
        int count = 0;
    };

    // The directory holds the image's own tags and the metadata's (tiff_directory_tags), in tag order; values
    // over 8 bytes (the metadata's, and the tile arrays) follow it, then the tiles from a 4 KiB boundary.
    static Layout make_layout(const std::string& path, const ImageShape& s, int side, const ImageMetadata& metadata) {
        detail::check_tile_side(path, side);
        Layout l;
        l.tiles_x = (s.width + side - 1) / side;
        l.tiles_y = (s.height + side - 1) / side;
        const std::uint64_t n = std::uint64_t(l.tiles_x) * std::uint64_t(l.tiles_y);
        const int sb = int(bytes_per_sample(s.type));
        l.tile_bytes = std::uint64_t(side) * side * s.channels * sb;
        l.tile_row_bytes = l.tile_bytes * std::uint64_t(l.tiles_x);
        const bool alpha = s.channels == 2 || s.channels == 4;
        std::vector<std::uint8_t>& h = l.header;
        auto put = [&](std::uint64_t v, int bytes) {
            for (int k = 0; k < bytes; ++k) h.push_back(std::uint8_t(v >> (8 * k)));
        };
        auto shorts = [&](int value) {  // up to four SHORTs, left-justified in the 8-byte value
            std::uint64_t v = 0;
            for (int c = 0; c < s.channels; ++c) v |= std::uint64_t(value) << (16 * c);
            return v;
        };
        constexpr int SHORT = 3, LONG = 4, LONG8 = 16;
        enum Value { inline_value, tile_offsets, tile_counts };
        struct Entry {
            int tag, type;
            std::uint64_t count, value;
            Value kind = inline_value;
            const std::vector<std::uint8_t>* data = nullptr;  // the metadata's bytes
        };
        std::vector<Entry> e = {
            {256, LONG, 1, std::uint64_t(s.width)},
            {257, LONG, 1, std::uint64_t(s.height)},
            {258, SHORT, std::uint64_t(s.channels), shorts(sb * 8)},
            {259, SHORT, 1, 1},                                  // no compression
            {262, SHORT, 1, std::uint64_t(s.channels >= 3 ? 2 : 1)},  // RGB or min-is-black
            {277, SHORT, 1, std::uint64_t(s.channels)},
            {284, SHORT, 1, 1},                                  // contiguous samples
            {322, LONG, 1, std::uint64_t(side)},
            {323, LONG, 1, std::uint64_t(side)},
            {324, LONG8, n, 0, tile_offsets},
            {325, LONG8, n, 0, tile_counts},
            {339, SHORT, std::uint64_t(s.channels), shorts(s.type == PixelType::f32 ? 3 : 1)},
        };
        if (alpha) e.push_back({338, SHORT, 1, 2});  // the last channel: unassociated alpha
        const std::vector<TiffTag> extra = tiff_directory_tags(metadata);
        for (const TiffTag& t : extra) e.push_back({t.number, t.type, t.count, 0, inline_value, &t.bytes});
        std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) { return a.tag < b.tag; });
        // Header: "II", 43, offset size 8, 0, first directory at 16.
        put('I', 1), put('I', 1), put(43, 2), put(8, 2), put(0, 2), put(16, 8);
        const std::uint64_t after_ifd = 16 + 8 + std::uint64_t(e.size()) * 20 + 8;
        const std::uint64_t offsets_at = after_ifd, counts_at = after_ifd + (n > 1 ? 8 * n : 0);
        std::uint64_t at = counts_at + (n > 1 ? 8 * n : 0);
        std::vector<const Entry*> blocks;  // metadata values stored after the directory, in order
        for (Entry& x : e)
            if (x.data && x.data->size() > 8) {
                x.value = at;
                at += (x.data->size() + 1) / 2 * 2;  // values start on a word
                blocks.push_back(&x);
            }
        l.data_offset = (at + 4095) / 4096 * 4096;
        put(std::uint64_t(e.size()), 8);
        for (const Entry& x : e) {
            put(std::uint64_t(x.tag), 2), put(std::uint64_t(x.type), 2), put(x.count, 8);
            if (x.data && x.data->size() <= 8) {  // left-justified in the value field
                h.insert(h.end(), x.data->begin(), x.data->end());
                h.insert(h.end(), 8 - x.data->size(), 0);
            } else if (x.kind == tile_offsets) {
                put(n > 1 ? offsets_at : l.data_offset, 8);
            } else if (x.kind == tile_counts) {
                put(n > 1 ? counts_at : l.tile_bytes, 8);
            } else {
                put(x.value, 8);
            }
        }
        put(0, 8);  // no next directory
        if (n > 1) {
            for (std::uint64_t t = 0; t < n; ++t) put(l.data_offset + t * l.tile_bytes, 8);
            for (std::uint64_t t = 0; t < n; ++t) put(l.tile_bytes, 8);
        }
        for (const Entry* x : blocks) {
            h.insert(h.end(), x->data->begin(), x->data->end());
            if (x->data->size() % 2) h.push_back(0);
        }
        l.file_bytes = l.data_offset + n * l.tile_bytes;
        return l;
    }

    std::string rows_named(int ty) const {
        const int y0 = ty * side_;
        return "rows " + std::to_string(y0) + "-" + std::to_string(std::min(shape_.height, y0 + side_) - 1);
    }

    // Tiles [tx0, tx0 + run_tiles_) of a whole row of tiles (adjacent in the file), assembled straight into
    // the file through a mapping of them where the file system allows, else into the thread's own buffer
    // and written with one pwrite. Either holds one run (about 1 MiB) per thread. Pads of edge tiles are
    // zeroed (a reopened file holds an earlier run's bytes).
    void write_tiles(const TileRow& tr, int tx0) {
        thread_local std::vector<std::uint8_t> buffer;
        const int count = std::min(run_tiles_, layout_.tiles_x - tx0);
        const std::size_t bytes = std::size_t(count) * layout_.tile_bytes;
        const std::uint64_t at = layout_.data_offset + std::uint64_t(tr.ty) * layout_.tile_row_bytes + std::uint64_t(tx0) * layout_.tile_bytes;
        const PartialFile::Mapping mapped = file_.map_for_write(at, bytes, rows_named(tr.ty));
        std::uint8_t* out = mapped.data;
        if (!out) {
            if (buffer.size() < bytes) buffer.resize(bytes);
            out = buffer.data();
        }
        const int rows = std::min(side_, shape_.height - tr.ty * side_);
        const std::size_t px = std::size_t(shape_.channels) * bytes_per_sample(shape_.type);
        const std::size_t tile_pitch = std::size_t(side_) * px;
        const bool pads = rows < side_ || (tx0 + count == layout_.tiles_x && shape_.width % side_ != 0);
        if (pads) std::memset(out, 0, bytes);
        for (int r = 0; r < rows; ++r) {
            const std::uint8_t* src = tr.first + std::size_t(r) * tr.pitch;
            for (int tx = tx0; tx < tx0 + count; ++tx) {
                const int w = std::min(side_, shape_.width - tx * side_);
                std::memcpy(out + std::size_t(tx - tx0) * layout_.tile_bytes + std::size_t(r) * tile_pitch,
                            src + std::size_t(tx) * side_ * px, std::size_t(w) * px);
            }
        }
        if (!mapped.data) file_.write_at(at, out, bytes, rows_named(tr.ty));
    }

    std::string path_;
    ImageShape shape_;
    int side_;
    Layout layout_;
    PartialFile file_;
    int threads_ = 1, run_tiles_ = 1;
    mutable std::mutex mutex_;
    std::map<int, Pending> pending_;
};

}  // namespace

void write_fixed_rows_file(ImageFormat format, const std::string& path, ConstImageView image) {
    const ImageShape& shape = image.shape;
    const bool pfm = format == ImageFormat::pfm;
    // The headers encode_pnm and encode_pfm write.
    const std::string header = pfm ? std::string(shape.channels == 3 ? "PF" : "Pf") + "\n" + std::to_string(shape.width) + " " +
                                         std::to_string(shape.height) + "\n-1\n"
                                   : pnm_header(shape, false);
    const ByteOrder order = pfm ? ByteOrder::little : ByteOrder::big;
    const bool bottom_up = pfm, swap = order != native_order && shape.type != PixelType::u8;
    const std::size_t row_bytes = shape.row_bytes();
    const int H = shape.height;
    // Rows as they lie in memory, top to bottom without padding: one pwrite a part. Padded or bottom-up rows:
    // one pwritev a part (at most IOV_MAX rows). Swapped samples: through a buffer of the part's size.
    const bool contiguous = !bottom_up && !swap && image.pitch == row_bytes;
    constexpr int max_scattered = 1024;
    const int rows_per_part = int(std::clamp<std::size_t>((std::size_t(4) << 20) / std::max<std::size_t>(1, row_bytes), 1,
                                                          contiguous ? std::size_t(INT_MAX) : std::size_t(max_scattered)));
    const int parts = (H + rows_per_part - 1) / rows_per_part;
    std::mutex buffers_mutex;
    std::vector<std::vector<std::uint8_t>> buffers;  // one per thread at most, reused from part to part
    write_file_atomically_with(path, [&](int fd) {
        if (!pwrite_all(fd, header.data(), header.size(), 0)) return false;
        std::atomic<int> error{0};
        run_parts(parts, io_threads_for_whole_images(), [&](int k) {
            if (error) return;
            const int r0 = k * rows_per_part, n = std::min(rows_per_part, H - r0);
            const std::uint64_t stored = bottom_up ? std::uint64_t(H - r0 - n) : std::uint64_t(r0);
            const std::uint64_t at = header.size() + stored * row_bytes;
            // The image row stored j-th in this part's run of the file.
            const auto row = [&](int j) { return reinterpret_cast<const std::uint8_t*>(image.row_bytes(bottom_up ? r0 + n - 1 - j : r0 + j)); };
            bool ok = false;
            if (contiguous) {
                ok = pwrite_all(fd, row(0), row_bytes * std::size_t(n), at);
            } else if (!swap) {
                iovec rows[max_scattered];
                for (int j = 0; j < n; ++j) rows[j] = {const_cast<std::uint8_t*>(row(j)), row_bytes};
                ok = pwritev_all(fd, rows, n, at);
            } else {
                std::vector<std::uint8_t> buffer;
                {
                    std::lock_guard lock(buffers_mutex);
                    if (!buffers.empty()) buffer = std::move(buffers.back()), buffers.pop_back();
                }
                buffer.resize(row_bytes * std::size_t(n));
                for (int j = 0; j < n; ++j) std::memcpy(buffer.data() + std::size_t(j) * row_bytes, row(j), row_bytes);
                if (shape.type == PixelType::u16) swap_bytes_16(buffer.data(), buffer.size() / 2);
                else swap_bytes_32(buffer.data(), buffer.size() / 4);
                ok = pwrite_all(fd, buffer.data(), buffer.size(), at);
                std::lock_guard lock(buffers_mutex);
                buffers.push_back(std::move(buffer));
            }
            if (!ok) {
                int none = 0;
                error.compare_exchange_strong(none, errno ? errno : EIO);
            }
        });
        if (error) errno = error;
        return error == 0;
    });
}

TiffCompression parse_tiff_compression(const std::string& name) {
    for (TiffCompression c : {TiffCompression::none, TiffCompression::deflate, TiffCompression::zstd, TiffCompression::lzw})
        if (name == to_string(c)) return c;
    fail("--compression", "'" + name + "' is not none, deflate, zstd or lzw");
}

const char* to_string(TiffCompression c) {
    switch (c) {
    case TiffCompression::deflate: return "deflate";
    case TiffCompression::zstd: return "zstd";
    case TiffCompression::lzw: return "lzw";
    case TiffCompression::none: break;
    }
    return "none";
}

int sink_row_granularity(const std::string& path, const SinkOptions& options) {
    const std::string ext = lower_extension(path);
    return ext == "tif" || ext == "tiff" ? options.tiff_tile_side : 1;
}

bool sink_random_access(const std::string& path, const SinkOptions& options) {
    const std::string ext = lower_extension(path);
    if (ext == "png") return false;
    return !((ext == "tif" || ext == "tiff") && options.tiff_compression != TiffCompression::none);
}

std::unique_ptr<RowSink> create_row_sink(const std::string& path, const ImageShape& shape, const SinkOptions& options) {
    validate_shape(shape, path.c_str());
    const std::string ext = lower_extension(path);
    std::string why;
    const bool tiff = ext == "tif" || ext == "tiff";
    if (!tiff && options.tiff_compression != TiffCompression::none)
        fail("--compression", std::string(to_string(options.tiff_compression)) + " applies to TIFF output, not " + path);
    if (tiff) {
        if (options.tiff_compression != TiffCompression::none) return detail::create_compressed_tiff_sink(path, shape, options);
        return std::make_unique<TiledTiffSink>(path, shape, options);
    }
    if (ext == "png") {
        if (!can_store(ImageFormat::png, shape, &why)) fail(path, why);
        return detail::create_png_sink(path, shape, options);
    }
    if (ext == "pgm" || ext == "ppm" || ext == "pnm") {
        if (!can_store(ImageFormat::pnm, shape, &why)) fail(path, why);
        return std::make_unique<FixedRowsSink>(path, shape, pnm_header(shape, false), false, ByteOrder::big, options);
    }
    if (ext == "pfm") {
        if (!can_store(ImageFormat::pfm, shape, &why)) fail(path, why);
        return std::make_unique<FixedRowsSink>(path, shape, std::string(shape.channels == 3 ? "PF" : "Pf") + "\n" +
                                                   std::to_string(shape.width) + " " + std::to_string(shape.height) + "\n-1\n",
                                               true, ByteOrder::little, options);
    }
    if (ext == "raw") return std::make_unique<FixedRowsSink>(path, shape, std::string(), false, native_order, options);
    refuse_directory(path);
    fail(path, "a streamed image is written as .tif/.tiff (tiled BigTIFF), .png, .pgm/.ppm/.pnm, .pfm or .raw; '." + ext +
                   "' needs the whole image in memory");
}

}  // namespace apron::io

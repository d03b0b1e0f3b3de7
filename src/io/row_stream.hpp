#pragma once
// Images read and written by rows, for images larger than memory (the streaming engine, src/stream/).
// A RowSource hands out any band of rows of one image while holding at most a small decoder buffer (a row
// of TIFF tiles, a strip, one PNG row); a RowSink takes bands of rows and writes them to the file without
// ever holding the whole image. The whole-image readers and writers (apron/io.hpp) stay as they are: these
// are the paths for images that do not fit.
//
// Errors are apron::Error, one line naming the file ("PATH: truncated tile 12 of 4096", "PATH: No space
// left on device while writing rows 8192-9215"), the same refusals of hostile headers as read_image.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/io.hpp"

namespace apron::io {

// A write that failed for want of room (a full disk or quota, ENOSPC/EDQUOT; a file-size limit, EFBIG): the
// run can go on with --resume once there is room, so a resumable sink keeps its partial file, and the
// message says so. Every other failure (bad input, a bug) removes it.
class OutOfRoomError : public Error {
public:
    using Error::Error;
};

// Raw samples without a header: `--raw WxHxC:type[:endianness]`, e.g. "65536x65536x1:u16:little".
struct RawLayout {
    ImageShape shape;  // a volume's: its planes' rows one after another (height = H * D), depth 1
    ByteOrder byte_order = ByteOrder::little;
    int depth = 1;     // "WxHxDxC": the planes of a volume (shape.height / depth rows each)
};
// Parses "WxHxC:type[:endianness]" or a volume's "WxHxDxC:type[:endianness]" (C 1-4, type u8/u16/f32,
// endianness little (default) or big); throws apron::Error naming `what` ("--raw: ...").
RawLayout parse_raw_layout(const std::string& text, const std::string& what = "--raw");

class RowSource {
public:
    virtual ~RowSource() = default;
    virtual const ImageShape& shape() const = 0;
    virtual const std::string& path() const = 0;
    // Copies rows [y0, y0 + band.height()) into `band` (host memory, band.width() == shape().width, same
    // channels and type; any pitch). Bands may come in any order and may overlap earlier ones (halos); a
    // source that can only go forward (PNG, JPEG) restarts the decode when asked for rows behind it, so
    // callers read in increasing y. Thread-compatible, not thread-safe: one caller at a time.
    virtual void read_rows(int y0, ImageView band) = 0;
    // Host bytes the source holds besides the caller's bands (decoder buffers), for the memory budget.
    virtual std::uint64_t buffer_bytes() const = 0;
    // The caller will ask again for up to `rows` rows behind the last one it read (the halos of
    // consecutive bands overlap by that much): a forward-only source keeps that many decoded rows instead of
    // restarting its decode for every band. Call before buffer_bytes() is budgeted.
    virtual void retain_rows(int rows) { (void)rows; }
};

struct SourceOptions {
    // Set: the file is raw samples of this layout (no header is read; the file size must match exactly).
    std::optional<RawLayout> raw;
    std::uint64_t max_pixels = std::uint64_t(1) << 40;  // the streaming limit (1 Tpix); ReadOptions' is 1 Gpix
    ByteOrder pnm_byte_order = ByteOrder::big;
    // Formats read whole (PNG, JPEG, ASCII PNM) must decode within this many bytes (0: no limit).
    std::uint64_t whole_decode_budget = 0;
    // Threads one read_rows may use (rows at fixed offsets are read in parts at once: one thread copies
    // about 2 GB/s out of the page cache, the memory bus several times that).
    int threads = 1;
};

// Opens binary PNM/PGM/PPM/PAM, PFM and raw samples (rows read at fixed offsets), TIFF/BigTIFF (strips or
// tiles, any compression libtiff reads; a row of tiles or a strip decoded at a time), non-interlaced PNG
// (decoded row by row, the same bits as read_image), or any other format read_image knows (interlaced PNG,
// JPEG, ASCII PNM), decoded whole within SourceOptions::whole_decode_budget. The format follows the content,
// as read_image does.
std::unique_ptr<RowSource> open_row_source(const std::string& path, const SourceOptions& options = {});

enum class TiffCompression : unsigned char { none, deflate, zstd, lzw };
// "none", "deflate", "zstd" or "lzw"; anything else is an apron::Error naming --compression.
TiffCompression parse_tiff_compression(const std::string& name);
const char* to_string(TiffCompression c);

struct SinkOptions {
    // TIFF outputs: tiled BigTIFF with tiles of tile_side x tile_side (a multiple of 16).
    int tiff_tile_side = 256;
    TiffCompression tiff_compression = TiffCompression::none;
    int png_compression = 6;
    // Keep the partial file on failure or destruction without commit() (resume); otherwise it is removed.
    bool keep_partial = false;
    // Reopen the partial file of an earlier run (random-access sinks only), keeping what it holds.
    bool reopen_partial = false;
    // Threads one write_rows may use (rows or rows of tiles written in parts at once, with pwrite).
    int threads = 1;
    // TIFF outputs: written into the directory (profile, orientation, resolution, description, carried
    // tags); PNG: into the chunks before IDAT, as encode_image writes them. PNM, PFM and raw hold none
    // (fit_metadata says so).
    ImageMetadata metadata;
};

class RowSink {
public:
    virtual ~RowSink() = default;  // without commit(): removes the partial file unless keep_partial
    virtual const ImageShape& shape() const = 0;
    virtual const std::string& path() const = 0;
    // True: bands may be written in any order (uncompressed tiled BigTIFF at fixed offsets, PNM, PFM, raw),
    // by several threads or processes at once when their bands cover disjoint tile rows. False: in order,
    // y0 == the rows written so far (PNG, compressed TIFF).
    virtual bool random_access() const = 0;
    // Bands should start and end on multiples of this (the TIFF tile height; 1 for row formats), except the
    // image's last band. A random-access sink given a band that does not lies buffers the partial tile row.
    virtual int row_granularity() const = 0;
    // Writes rows [y0, y0 + band.height()) of the image (host memory, the sink's shape's width, channels and
    // type).
    virtual void write_rows(int y0, ConstImageView band) = 0;
    // Makes every row written so far durable (fdatasync of the partial file): the streaming engine records a
    // band as done in its journal only after this returns.
    virtual void sync() = 0;
    // Writes what is left (a TIFF directory), syncs, and renames the partial file to path(). Only after
    // every row was written.
    virtual void commit() = 0;
    virtual std::uint64_t buffer_bytes() const = 0;
    // The partial file's name: beside path(), hidden, fixed (".NAME.apron-partial"), so a resumed run finds it.
    virtual std::string partial_path() const = 0;

    // Random-access sinks: the bytes of the partial file that rows [y0, y1) are stored in, one run (y0 and
    // y1 on multiples of row_granularity(), or y1 the image's height), or nullopt (rows that cut a tile, or a
    // sink written in order). The stream journal keeps a checksum of them per band.
    struct StoredBytes {
        std::uint64_t offset = 0, size = 0;
    };
    virtual std::optional<StoredBytes> stored_bytes(int y0, int y1) const {
        (void)y0, (void)y1;
        return std::nullopt;
    }
    // Reads back n bytes of the partial file at `offset`; false on a short read or an error.
    virtual bool read_back(std::uint64_t offset, void* data, std::size_t n) const {
        (void)offset, (void)data, (void)n;
        return false;
    }
};

// The partial file a sink for `path` writes (".NAME.apron-partial" beside the file a symbolic link at `path`
// leads to); refuses a path that is not a regular file or a new one, as the sink would.
std::string partial_path_for(const std::string& path);

// The row_granularity() create_row_sink(path, ...) would have, from the extension alone.
int sink_row_granularity(const std::string& path, const SinkOptions& options);
// The random_access() create_row_sink(path, ...) would have, from the extension and options alone: false for
// PNG and compressed TIFF, which are written in order and so cannot be resumed or shared by processes.
bool sink_random_access(const std::string& path, const SinkOptions& options);

// Creates the sink for `path`'s extension (.tif/.tiff: tiled BigTIFF, uncompressed at fixed offsets or
// compressed in order; .pgm/.ppm/.pnm; .pfm; .png, in order; .raw: samples in native byte order). Refuses
// shapes the format cannot store (can_store), and a compression for anything but TIFF, before writing.
std::unique_ptr<RowSink> create_row_sink(const std::string& path, const ImageShape& shape,
                                         const SinkOptions& options = {});

// The encoded formats, which create_row_sink and open_row_source dispatch to.
namespace detail {
// Compressed tiled BigTIFF through libtiff (tiff_row_sink.cpp); options.tiff_compression is not none.
std::unique_ptr<RowSink> create_compressed_tiff_sink(const std::string& path, const ImageShape& shape,
                                                     const SinkOptions& options);
// PNG rows through libpng (png_rows.cpp).
std::unique_ptr<RowSink> create_png_sink(const std::string& path, const ImageShape& shape, const SinkOptions& options);
}  // namespace detail

} // namespace apron::io

// Compressed tiled BigTIFF written by rows (row_stream.hpp): libtiff encodes each tile (deflate, zstd or
// LZW, with the horizontal predictor for integer samples and the floating-point one for f32) and appends it
// to the partial file, so tile offsets are known only once the tiles before them are written: the sink takes
// rows in order, buffers one row of tiles and encodes it when it is whole. The directory goes at the end.
//
// The tiles are encoded on the writer's thread alone: libtiff's handle is not thread-safe, and encoding
// tiles elsewhere would mean running the codecs and the predictor outside libtiff. The band engine keeps
// reading and filtering while this thread encodes.
#include "apron/errors.hpp"
#include "io/row_stream.hpp"

#if APRON_HAVE_TIFF

#include <tiffio.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "io/partial_file.hpp"
#include "io/tiff_client.hpp"

namespace apron::io {

namespace {

// libtiff's view of the partial file: pread/pwrite at its own position, on the descriptor PartialFile owns.
// Nothing here throws (libtiff's C frames sit between); a failure is kept for the error message.
struct FdFile {
    int fd = -1;
    std::uint64_t pos = 0, size = 0;
    int error = 0;  // errno of the first failed write
    TiffMessage message;
};

FdFile& fd_of(thandle_t h) { return *static_cast<FdFile*>(h); }

tmsize_t fd_read(thandle_t h, void* dst, tmsize_t n) {
    FdFile& f = fd_of(h);
    const ssize_t r = n > 0 ? ::pread(f.fd, dst, std::size_t(n), off_t(f.pos)) : 0;
    if (r > 0) f.pos += std::uint64_t(r);
    return r < 0 ? -1 : tmsize_t(r);
}

tmsize_t fd_write(thandle_t h, void* src, tmsize_t n) {
    FdFile& f = fd_of(h);
    if (n <= 0) return n;
    if (!pwrite_all(f.fd, src, std::size_t(n), f.pos)) {
        if (!f.error) f.error = errno;
        return -1;
    }
    f.pos += std::uint64_t(n);
    f.size = std::max(f.size, f.pos);
    return n;
}

toff_t fd_seek(thandle_t h, toff_t offset, int whence) {
    FdFile& f = fd_of(h);
    const std::optional<std::uint64_t> to = tiff_seek_position(f.pos, f.size, offset, whence);
    if (!to) return toff_t(-1);
    return f.pos = *to;
}

int fd_close(thandle_t) { return 0; }  // PartialFile closes the descriptor
toff_t fd_size(thandle_t h) { return fd_of(h).size; }
int fd_map(thandle_t, void**, toff_t*) { return 0; }
void fd_unmap(thandle_t, void*, toff_t) {}

int codec_of(TiffCompression c) {
    switch (c) {
    case TiffCompression::deflate: return COMPRESSION_ADOBE_DEFLATE;
    case TiffCompression::zstd: return COMPRESSION_ZSTD;
    case TiffCompression::lzw: return COMPRESSION_LZW;
    case TiffCompression::none: break;
    }
    return COMPRESSION_NONE;
}

class CompressedTiffSink final : public RowSink {
public:
    CompressedTiffSink(const std::string& path, const ImageShape& shape, const SinkOptions& options)
        : path_(path), shape_(shape), side_(options.tiff_tile_side), file_(path, 0, options), metadata_(options.metadata) {
        detail::check_tile_side(path, side_);
        const int codec = codec_of(options.tiff_compression);
        if (!TIFFIsCODECConfigured(std::uint16_t(codec)))
            fail(path, std::string("this libtiff has no ") + to_string(options.tiff_compression) +
                           " codec (try --compression deflate, lzw or none)");
        tiles_x_ = (shape.width + side_ - 1) / side_;
        px_ = std::size_t(shape.channels) * bytes_per_sample(shape.type);
        tile_.resize(std::size_t(side_) * side_ * px_);
        rows_.resize(std::size_t(side_) * shape.row_bytes());
        f_.fd = file_.fd();
        open(codec);
    }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return path_; }
    bool random_access() const override { return false; }
    int row_granularity() const override { return side_; }
    // The row of tiles being filled, one tile being encoded and libtiff's buffer of its encoded bytes.
    std::uint64_t buffer_bytes() const override { return rows_.size() + 2 * tile_.size(); }
    std::string partial_path() const override { return file_.partial(); }
    void sync() override { file_.sync(); }

    void write_rows(int y0, ConstImageView band) override {
        if (y0 != written_)
            fail(path_, "rows " + std::to_string(y0) + "-" + std::to_string(y0 + band.height() - 1) +
                            " came out of order (a compressed TIFF is written from the top, " + std::to_string(written_) +
                            " rows so far)");
        const std::size_t row_bytes = shape_.row_bytes();
        for (int r = 0; r < band.height(); ++r) {
            const int in_tile_row = written_ % side_;
            std::memcpy(rows_.data() + std::size_t(in_tile_row) * row_bytes, band.row_bytes(r), row_bytes);
            ++written_;
            if (written_ % side_ == 0 || written_ == shape_.height) encode_tile_row((written_ - 1) / side_);
        }
    }

    void commit() override {
        if (written_ != shape_.height)
            fail(path_, "cannot finish the TIFF: " + std::to_string(written_) + " of " + std::to_string(shape_.height) + " rows written");
        if (!TIFFWriteDirectory(tif_.get())) failed("the TIFF directory");
        TIFFClose(tif_.release());  // the directory is out; closing writes nothing more
        file_.commit();
    }

private:
    void open(int codec) {
        register_carried_tiff_tags();
        const TiffOpenOptions opts = quiet_tiff_options(path_, f_.message);
        tif_.reset(TIFFClientOpenExt(path_.c_str(), "w8", &f_, fd_read, fd_write, fd_seek, fd_close, fd_size, fd_map,
                                     fd_unmap, opts.get()));
        if (!tif_) failed("the TIFF header");
        TIFF* tif = tif_.get();
        const int c = shape_.channels;
        const bool ok =
            TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(shape_.width)) &&
            TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(shape_.height)) &&
            TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, std::uint16_t(c)) &&
            TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, std::uint16_t(8 * bytes_per_sample(shape_.type))) &&
            TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, shape_.type == PixelType::f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
            TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
            TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, c >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
            TIFFSetField(tif, TIFFTAG_TILEWIDTH, std::uint32_t(side_)) &&
            TIFFSetField(tif, TIFFTAG_TILELENGTH, std::uint32_t(side_)) &&
            TIFFSetField(tif, TIFFTAG_COMPRESSION, std::uint16_t(codec)) &&
            // Differences of neighbours compress far better than the samples; floats split into byte planes.
            TIFFSetField(tif, TIFFTAG_PREDICTOR, shape_.type == PixelType::f32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL);
        if (!ok) failed("the TIFF header");
        if (c == 2 || c == 4) {
            const std::uint16_t extra[] = {EXTRASAMPLE_UNASSALPHA};  // the last channel: unassociated alpha
            if (!TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, std::uint16_t(1), extra)) failed("the TIFF header");
        }
        set_tiff_metadata(tif, metadata_);
    }

    // Every tile of row of tiles `ty` from rows_, each a full tile (edge tiles padded with zeros).
    void encode_tile_row(int ty) {
        const int row0 = ty * side_, rows = std::min(side_, shape_.height - row0);
        const std::size_t tile_pitch = std::size_t(side_) * px_;
        for (int tx = 0; tx < tiles_x_; ++tx) {
            const int w = std::min(side_, shape_.width - tx * side_);
            // The predictor rewrites the tile in place, so it is assembled afresh every time.
            if (w < side_ || rows < side_) std::memset(tile_.data(), 0, tile_.size());
            for (int r = 0; r < rows; ++r)
                std::memcpy(tile_.data() + std::size_t(r) * tile_pitch,
                            rows_.data() + std::size_t(r) * shape_.row_bytes() + std::size_t(tx) * side_ * px_, std::size_t(w) * px_);
            const std::uint32_t tile = std::uint32_t(ty) * std::uint32_t(tiles_x_) + std::uint32_t(tx);
            if (TIFFWriteEncodedTile(tif_.get(), tile, tile_.data(), tmsize_t(tile_.size())) < 0)
                failed("rows " + std::to_string(row0) + "-" + std::to_string(row0 + rows - 1));
        }
    }

    [[noreturn]] void failed(const std::string& what) const {
        if (f_.error) file_.write_failed(f_.error, what);
        fail(path_, "cannot write " + what + ": " + (f_.message.text[0] ? f_.message.text : "libtiff failed"));
    }

    std::string path_;
    ImageShape shape_;
    int side_, tiles_x_ = 0, written_ = 0;
    std::size_t px_ = 0;
    detail::PartialFile file_;
    ImageMetadata metadata_;  // written into the directory (SinkOptions::metadata)
    FdFile f_;
    // After file_ and f_: freed before them. Without commit, TIFFCleanup still writes a directory into the
    // partial file, which is removed anyway (or was the cause of the failure: its error is captured).
    struct Cleanup {
        void operator()(TIFF* t) const { TIFFCleanup(t); }
    };
    std::unique_ptr<TIFF, Cleanup> tif_;
    std::vector<std::uint8_t> rows_, tile_;
};

}  // namespace

std::unique_ptr<RowSink> detail::create_compressed_tiff_sink(const std::string& path, const ImageShape& shape,
                                                             const SinkOptions& options) {
    return std::make_unique<CompressedTiffSink>(path, shape, options);
}

}  // namespace apron::io

#else  // !APRON_HAVE_TIFF

namespace apron::io {

std::unique_ptr<RowSink> detail::create_compressed_tiff_sink(const std::string& path, const ImageShape&, const SinkOptions&) {
    fail(path, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
}

}  // namespace apron::io

#endif

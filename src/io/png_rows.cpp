// PNG by rows (row_stream.hpp), for images larger than memory.
//
// Reading: a non-interlaced file is decoded one row at a time with png_read_row, through the same transforms
// as read_image (png_support.hpp), so the rows are read_image's bits. Only a ring of recent rows is kept:
// the halos of consecutive bands overlap by a few rows (RowSource::retain_rows), and a row behind the ring
// restarts the decode from the file's start. An interlaced file has no row before its last pass; the caller
// decodes it whole instead (open_row_source, within its budget).
//
// Writing: rows in order through png_write_row into the partial file, IEND at commit.
//
// As in png.cpp, every libpng call that can longjmp runs inside a step_* function that owns no C++ objects.
#include <png.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "io/partial_file.hpp"
#include "io/png_support.hpp"
#include "io/row_stream.hpp"

namespace apron::io {

namespace {

using namespace png_detail;

bool step_read_row(png_structp png, png_bytep row) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_row(png, row, nullptr);
    return true;
}

bool step_read_end(png_structp png, png_infop info) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_read_end(png, info);  // the chunks after the pixels up to IEND: a cut file is refused, as by read_image
    return true;
}

class PngRows final : public RowSource {
public:
    PngRows(std::unique_ptr<ByteSource> file, const std::string& path, const ReadOptions& options)
        : file_(std::move(file)), path_(path), options_(options) {
        start();
    }
    bool interlaced() const { return interlaced_; }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return path_; }
    // The ring, and libpng's own: two rows (the current and the previous, for the filters) and zlib's window.
    std::uint64_t buffer_bytes() const override { return ring_.size() + 2 * std::uint64_t(shape_.row_bytes()) + (64 << 10); }
    void retain_rows(int rows) override {
        capacity_ = std::max(1, rows + 1);
        ring_.assign(std::size_t(capacity_) * shape_.row_bytes(), 0);
        lowest_ = next_;  // the slots moved: nothing decoded so far is kept
    }

    void read_rows(int y0, ImageView band) override {
        for (int r = 0; r < band.height(); ++r)
            std::memcpy(band.row_bytes(r), row(y0 + r), band.shape.row_bytes());
    }

private:
    // (Re)starts the decode at the first row: the header, checked as read_image checks it, and the transforms.
    void start() {
        s_ = std::make_unique<ReadStructs>();
        ctx_ = PngContext{};
        ctx_.in = file_.get();
        s_->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx_, on_error, on_warning);
        if (s_->png) s_->info = png_create_info_struct(s_->png);
        if (!s_->png || !s_->info) fail(path_, "out of memory starting the PNG decoder");
        png_set_read_fn(s_->png, &ctx_, read_from_source);
        png_set_user_limits(s_->png, 0x7fffffff, 0x7fffffff);  // the pixel limit is check_image's
        if (!step_read_info(s_->png, s_->info)) failed();
        interlaced_ = png_get_interlace_type(s_->png, s_->info) != PNG_INTERLACE_NONE;
        if (interlaced_) return;
        const int channels = channels_after_transforms(s_->png, s_->info);
        const PixelType type = png_get_bit_depth(s_->png, s_->info) == 16 ? PixelType::u16 : PixelType::u8;
        const ImageShape shape = check_image(path_, png_get_image_width(s_->png, s_->info), png_get_image_height(s_->png, s_->info),
                                             channels, type, options_, {0, 0});
        if (next_ >= 0 && !(shape == shape_)) fail(path_, "the file changed while it was read");
        int passes = 1;
        if (!step_set_transforms(s_->png, s_->info, &passes)) failed();
        if (png_get_channels(s_->png, s_->info) != channels || png_get_rowbytes(s_->png, s_->info) != shape.row_bytes())
            fail(path_, "unsupported PNG layout (" + std::to_string(png_get_channels(s_->png, s_->info)) + " channels of " +
                            std::to_string(png_get_bit_depth(s_->png, s_->info)) + " bits)");
        if (next_ < 0) {
            shape_ = shape;
            ring_.assign(std::size_t(capacity_) * shape_.row_bytes(), 0);
        }
        next_ = lowest_ = 0;
    }

    // Row y, decoded (or kept): a pointer into the ring, valid until the next call.
    const std::uint8_t* row(int y) {
        if (y < 0 || y >= shape_.height) fail(path_, "row " + std::to_string(y) + " is outside the image");
        if (y < lowest_) start();
        while (next_ <= y) {
            std::uint8_t* slot = ring_.data() + std::size_t(next_ % capacity_) * shape_.row_bytes();
            if (!step_read_row(s_->png, slot)) failed(next_);
            ++next_;
            lowest_ = std::max(lowest_, next_ - capacity_);
            if (next_ == shape_.height && !step_read_end(s_->png, s_->info)) failed(next_ - 1);
        }
        return ring_.data() + std::size_t(y % capacity_) * shape_.row_bytes();
    }

    [[noreturn]] void failed(int y = -1) const {
        fail(path_, std::string("bad PNG file") + (y >= 0 ? " at row " + std::to_string(y) : "") + ": " + ctx_.message);
    }

    std::unique_ptr<ByteSource> file_;
    std::string path_;
    ReadOptions options_;
    PngContext ctx_;
    std::unique_ptr<ReadStructs> s_;  // after ctx_: destroyed before the context its callbacks use
    ImageShape shape_;
    bool interlaced_ = false;
    int next_ = -1, lowest_ = 0;  // the next row to decode (-1: no header read yet); the lowest row kept
    int capacity_ = 1;            // rows in the ring
    std::vector<std::uint8_t> ring_;
};

// The partial file, written at ctx->pos; a failure is kept in the context (no exception crosses libpng).
void write_to_file(png_structp png, png_bytep src, std::size_t n) {
    auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
    if (!pwrite_all(ctx->fd, src, n, ctx->pos)) {
        ctx->write_error = errno;
        png_error(png, "write failed");
    }
    ctx->pos += n;
}
void flush_file(png_structp) {}

bool step_write_header(png_structp png, png_infop info, const ImageShape& s, int level, const PngMetadata& metadata) {
    if (setjmp(png_jmpbuf(png))) return false;
    static constexpr int color_of_channels[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                                PNG_COLOR_TYPE_RGB_ALPHA};
    const int depth = s.type == PixelType::u16 ? 16 : 8;
    png_set_IHDR(png, info, png_uint_32(s.width), png_uint_32(s.height), depth, color_of_channels[s.channels],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    set_png_metadata(png, info, metadata);
    png_write_info(png, info);
    if (depth == 16 && little_endian_host) png_set_swap(png);  // PNG stores 16-bit samples big-endian
    return true;
}

// libpng copies each row before transforming it, so handing it the caller's const rows is safe.
bool step_write_rows(png_structp png, const std::byte* first, std::size_t pitch, int rows) {
    if (setjmp(png_jmpbuf(png))) return false;
    for (int r = 0; r < rows; ++r)
        png_write_row(png, reinterpret_cast<png_const_bytep>(first + std::size_t(r) * pitch));
    return true;
}

bool step_write_end(png_structp png) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_write_end(png, nullptr);
    return true;
}

class PngSink final : public RowSink {
public:
    PngSink(const std::string& path, const ImageShape& shape, const SinkOptions& options)
        : path_(path), shape_(shape), file_(path, 0, options) {
        if (options.png_compression < 0 || options.png_compression > 9)
            fail(path, "PNG compression level " + std::to_string(options.png_compression) + " is outside 0..9");
        ctx_.fd = file_.fd();
        s_.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx_, on_error, on_warning);
        if (s_.png) s_.info = png_create_info_struct(s_.png);
        if (!s_.png || !s_.info) fail(path, "out of memory starting the PNG encoder");
        png_set_write_fn(s_.png, &ctx_, write_to_file, flush_file);
        metadata_ = png_metadata_of(options.metadata);  // libpng keeps pointers into it until the header is out
        if (!step_write_header(s_.png, s_.info, shape_, options.png_compression, metadata_)) failed("the PNG header");
    }
    const ImageShape& shape() const override { return shape_; }
    const std::string& path() const override { return path_; }
    bool random_access() const override { return false; }
    int row_granularity() const override { return 1; }
    // libpng's rows (the current, the previous and a filtered one or more) and zlib's state.
    std::uint64_t buffer_bytes() const override { return 4 * std::uint64_t(shape_.row_bytes()) + (256 << 10); }
    std::string partial_path() const override { return file_.partial(); }
    void sync() override { file_.sync(); }

    void write_rows(int y0, ConstImageView band) override {
        const std::string rows = "rows " + std::to_string(y0) + "-" + std::to_string(y0 + band.height() - 1);
        if (y0 != written_)
            fail(path_, rows + " came out of order (a PNG is written from the top, " + std::to_string(written_) + " rows so far)");
        if (!step_write_rows(s_.png, band.row_bytes(0), band.pitch, band.height())) failed(rows);
        written_ += band.height();
    }
    void commit() override {
        if (written_ != shape_.height)
            fail(path_, "cannot finish the PNG: " + std::to_string(written_) + " of " + std::to_string(shape_.height) + " rows written");
        if (!step_write_end(s_.png)) failed("the end of the PNG");
        file_.commit();
    }

private:
    [[noreturn]] void failed(const std::string& what) const {
        if (ctx_.write_error) file_.write_failed(ctx_.write_error, what);
        fail(path_, "cannot encode " + what + ": " + ctx_.message);
    }

    std::string path_;
    ImageShape shape_;
    detail::PartialFile file_;
    PngContext ctx_;
    PngMetadata metadata_;
    WriteStructs s_;  // after ctx_, file_ and metadata_: destroyed before them
    int written_ = 0;
};

}  // namespace

std::unique_ptr<RowSource> open_png_rows(std::unique_ptr<ByteSource> file, const std::string& name, const ReadOptions& options) {
    auto rows = std::make_unique<PngRows>(std::move(file), name, options);
    if (rows->interlaced()) return nullptr;
    return rows;
}

std::unique_ptr<RowSink> detail::create_png_sink(const std::string& path, const ImageShape& shape, const SinkOptions& options) {
    return std::make_unique<PngSink>(path, shape, options);
}

}  // namespace apron::io

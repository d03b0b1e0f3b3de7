// Format dispatch: magic bytes pick the decoder (and the prober), the extension picks the encoder, and the
// limits every reader shares (check_image: pixels and memory budget, allocate_image) live here so that each
// codec states them once.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <system_error>

#include "apron/memory.hpp"
#include "io/codecs.hpp"
#include "io/exif.hpp"
#include "io/file_io.hpp"
#include "io/output_target.hpp"

namespace apron {

namespace {

bool starts_with(io::Bytes b, std::initializer_list<std::uint8_t> magic) {
    return b.size() >= magic.size() && std::equal(magic.begin(), magic.end(), b.begin());
}

std::string hex_prefix(io::Bytes b) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < std::min<std::size_t>(b.size(), 8); ++i) {
        if (i) s += ' ';
        s += digits[b[i] >> 4];
        s += digits[b[i] & 15];
    }
    return s;
}

std::string lower_extension(const std::string& path) {
    const std::size_t slash = path.find_last_of('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const std::size_t dot = base.find_last_of('.');
    if (dot == std::string::npos) return {};
    std::string ext = base.substr(dot + 1);
    for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
    return ext;
}

}  // namespace

const char* to_string(ImageFormat f) {
    switch (f) {
    case ImageFormat::pnm: return "pnm";
    case ImageFormat::pfm: return "pfm";
    case ImageFormat::png: return "png";
    case ImageFormat::jpeg: return "jpeg";
    case ImageFormat::tiff: return "tiff";
    case ImageFormat::fits: return "fits";
    }
    return "?";
}

std::string supported_formats() {
    std::string formats = "pnm pfm png jpeg";
#if APRON_HAVE_TIFF
    formats += " tiff";
#endif
#if APRON_HAVE_FITS
    formats += " fits";
#endif
    return formats;
}

ImageFormat format_for_path(const std::string& path) {
    const std::string ext = lower_extension(path);
    if (ext == "pgm" || ext == "ppm" || ext == "pnm") return ImageFormat::pnm;
    if (ext == "pfm") return ImageFormat::pfm;
    if (ext == "png") return ImageFormat::png;
    if (ext == "jpg" || ext == "jpeg" || ext == "jpe") return ImageFormat::jpeg;
    if (ext == "tif" || ext == "tiff") {
#if APRON_HAVE_TIFF
        return ImageFormat::tiff;
#else
        fail(path, "TIFF support is not built in (install libtiff-dev and rebuild apron)");
#endif
    }
    if (ext == "fits" || ext == "fit" || ext == "fts") {
#if APRON_HAVE_FITS
        return ImageFormat::fits;
#else
        fail(path, "FITS support is not built in (install libcfitsio-dev and rebuild apron)");
#endif
    }
    fail(path, (ext.empty() ? std::string("no file extension") : "unknown image file extension '." + ext + "'") +
                   " (apron writes .pgm .ppm .pnm .pfm .png .jpg .jpeg" +
#if APRON_HAVE_TIFF
                   " .tif .tiff" +
#endif
#if APRON_HAVE_FITS
                   " .fits .fit .fts" +
#endif
                   ")");
}

bool can_store(ImageFormat format, const ImageShape& shape, std::string* why) {
    auto no = [&](const char* reason) {
        if (why) *why = reason;
        return false;
    };
    if (shape.channels < 1 || shape.channels > max_channels) return no("apron images have 1 to 4 channels");
    const bool one_or_three = shape.channels == 1 || shape.channels == 3;
    switch (format) {
    case ImageFormat::pnm:
        if (shape.type == PixelType::f32)
            return no("PNM (.pgm/.ppm) stores u8 or u16 only; write f32 images as .pfm or .tif");
        if (!one_or_three)
            return no("PNM (.pgm/.ppm) stores 1 or 3 channels; write 2- or 4-channel images as .png or .tif");
        return true;
    case ImageFormat::pfm:
        if (shape.type != PixelType::f32)
            return no("PFM stores f32 only; convert to f32 or write .pgm/.ppm, .png or .tif");
        if (!one_or_three) return no("PFM stores 1 or 3 channels; write 2- or 4-channel f32 images as .tif");
        return true;
    case ImageFormat::png:
        if (shape.type == PixelType::f32) return no("PNG stores u8 or u16 only; write f32 images as .pfm or .tif");
        return true;
    case ImageFormat::jpeg:
        if (shape.type != PixelType::u8)
            return no("JPEG stores u8 only; write u16 images as .png or .tif and f32 as .pfm or .tif");
        if (!one_or_three)
            return no("JPEG stores 1 or 3 channels (no alpha); write 2- or 4-channel images as .png or .tif");
        return true;
    case ImageFormat::tiff:
#if APRON_HAVE_TIFF
        return true;
#else
        return no("TIFF support is not built in (install libtiff-dev and rebuild apron)");
#endif
    case ImageFormat::fits:
#if APRON_HAVE_FITS
        if (shape.channels != 1)
            return no("FITS images have one channel here (a cube's planes are pages, not channels); write colour images as "
                      ".tif or .png");
        return true;
#else
        return no("FITS support is not built in (install libcfitsio-dev and rebuild apron)");
#endif
    }
    return no("unknown format");
}

std::uint64_t io::check_size(const std::string& name, std::uint64_t width, std::uint64_t height,
                             const ReadOptions& options) {
    const std::string size = std::to_string(width) + "x" + std::to_string(height);
    if (width == 0 || height == 0) fail(name, "image size " + size + " is empty");
    if (width > std::uint64_t(INT_MAX) || height > std::uint64_t(INT_MAX))
        fail(name, "image size " + size + " is too large (at most " + std::to_string(INT_MAX) + " pixels a side)");
    // Both sides are below 2^31 here, so the product cannot overflow 64 bits.
    const std::uint64_t pixels = width * height;
    if (pixels > options.max_pixels)
        fail(name, "image size " + size + " = " + std::to_string(pixels) + " pixels is over the limit of " +
                       std::to_string(options.max_pixels) + " (raise it with --max-pixels)");
    return pixels;
}

namespace {

// Two sizes for "needs A, over the budget of B": exact byte counts when the rounded forms would read alike.
std::pair<std::string, std::string> two_sizes(std::uint64_t a, std::uint64_t b) {
    std::string ra = format_bytes(a), rb = format_bytes(b);
    if (ra == rb) ra = std::to_string(a) + " bytes", rb = std::to_string(b) + " bytes";
    return {ra, rb};
}

}  // namespace

// The file itself is held while it is decoded: refuse one larger than the budget before reading it.
void io::check_file_budget(const std::string& name, std::uint64_t file_bytes, const ReadOptions& options) {
    if (options.memory_budget != 0 && file_bytes > options.memory_budget) {
        const auto [file, budget] = two_sizes(file_bytes, options.memory_budget);
        fail(name, "the file is " + file + ", over the memory budget of " + budget + " (raise it with --memory)");
    }
}

std::uint64_t io::image_bytes(std::uint64_t width, std::uint64_t height, int channels, PixelType type) {
    // With sides up to 2^31 a padded row stays below 2^36 bytes, but rows times height may pass 2^64:
    // saturate rather than wrap.
    const std::uint64_t pitch = (width * std::uint64_t(channels) * bytes_per_sample(type) + 63) / 64 * 64;
    return height != 0 && pitch > UINT64_MAX / height ? UINT64_MAX : pitch * height;
}

ImageShape io::check_image(const std::string& name, std::uint64_t width, std::uint64_t height, int channels,
                           PixelType type, const ReadOptions& options, const Held& held) {
    check_size(name, width, height, options);
    const ImageShape shape{int(width), int(height), channels, type};
    validate_shape(shape, name.c_str());
    if (options.memory_budget == 0) return shape;
    const std::uint64_t pixels = image_bytes(width, height, channels, type);
    const auto add = [](std::uint64_t a, std::uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; };
    const std::uint64_t needed = add(add(add(held.file_bytes, held.decoder_bytes), held.pages_bytes), pixels);
    if (needed > options.memory_budget) {
        const auto [need, budget] = two_sizes(needed, options.memory_budget);
        fail(name, "decoding " + std::to_string(width) + "x" + std::to_string(height) + " " + std::to_string(channels) +
                       "-channel " + to_string(type) + " needs " + need + " (file " + format_bytes(held.file_bytes) +
                       " + pixels " + format_bytes(pixels) +
                       (held.decoder_bytes ? " + decoder buffers " + format_bytes(held.decoder_bytes) : "") +
                       (held.pages_bytes ? " + the pages before it " + format_bytes(held.pages_bytes) : "") +
                       "), over the memory budget of " + budget + " (raise it with --memory)");
    }
    return shape;
}

Image io::allocate_image(const std::string& name, std::uint64_t width, std::uint64_t height, int channels,
                         PixelType type, const ReadOptions& options, const Held& held) {
    const ImageShape shape = check_image(name, width, height, channels, type, options, held);
    try {
        return Image(shape, options.memory);
    } catch (const Error& e) {
        fail(name, e.what());  // the allocation's own message names "image", not the file
    }
}

std::size_t io::MemorySource::read(std::uint64_t offset, void* dst, std::size_t n) const noexcept {
    if (offset >= bytes_.size()) return 0;
    const std::size_t count = std::size_t(std::min<std::uint64_t>(n, bytes_.size() - offset));
    std::memcpy(dst, bytes_.data() + offset, count);
    return count;
}

std::size_t io::ByteSource::read_scattered(std::uint64_t offset, const iovec* parts, int count) const noexcept {
    std::size_t done = 0;
    for (int k = 0; k < count; ++k) {
        const std::size_t got = read(offset + done, parts[k].iov_base, parts[k].iov_len);
        done += got;
        if (got < parts[k].iov_len) break;
    }
    return done;
}

io::Buffer io::read_prefix(const ByteSource& source, std::size_t n) {
    Buffer prefix(std::size_t(std::min<std::uint64_t>(n, source.size())));
    prefix.resize(source.read(0, prefix.data(), prefix.size()));
    return prefix;
}

namespace {

// The format a file's first bytes announce.
enum class Magic { pnm, pfm, png, jpeg, tiff, fits, unknown };

Magic magic_of(io::Bytes bytes) {
    if (bytes.size() >= 2 && bytes[0] == 'P') {
        if (bytes[1] >= '1' && bytes[1] <= '7') return Magic::pnm;
        if (bytes[1] == 'f' || bytes[1] == 'F') return Magic::pfm;
    }
    if (starts_with(bytes, {0x89, 'P', 'N', 'G'})) return Magic::png;
    if (starts_with(bytes, {0xFF, 0xD8, 0xFF})) return Magic::jpeg;
    // Classic TIFF (42) and BigTIFF (43), both byte orders.
    if (starts_with(bytes, {'I', 'I', 42, 0}) || starts_with(bytes, {'M', 'M', 0, 42}) ||
        starts_with(bytes, {'I', 'I', 43, 0}) || starts_with(bytes, {'M', 'M', 0, 43}))
        return Magic::tiff;
    // FITS: the keyword SIMPLE of the primary header's first card (its 8 columns; cfitsio checks the rest).
    if (starts_with(bytes, {'S', 'I', 'M', 'P', 'L', 'E', ' ', ' '})) return Magic::fits;
    return Magic::unknown;
}

[[noreturn]] void unknown_format(io::Bytes first, const std::string& name) {
    if (first.empty()) fail(name, "empty file");
    fail(name, "unknown image format (first bytes " + hex_prefix(first) + "); apron reads " + supported_formats());
}

[[noreturn, maybe_unused]] void tiff_not_built(const std::string& name) {
    fail(name, "TIFF file, but TIFF support is not built in (install libtiff-dev and rebuild apron)");
}

[[noreturn, maybe_unused]] void fits_not_built(const std::string& name) {
    fail(name, "FITS file, but FITS support is not built in (install libcfitsio-dev and rebuild apron)");
}

// Whether pages beyond the first can be asked of the format: a TIFF's directories, a FITS cube's planes.
bool has_pages(Magic magic) { return magic == Magic::tiff || magic == Magic::fits; }

// A file read on demand, for probing.
class FileSource final : public io::ByteSource {
public:
    explicit FileSource(const io::InputFile& file) : file_(file) {}
    std::uint64_t size() const override { return file_.size(); }
    std::size_t read(std::uint64_t offset, void* dst, std::size_t n) const noexcept override {
        const long long got = file_.read_at(offset, dst, n);
        return got < 0 ? 0 : std::size_t(got);
    }
    std::size_t read_scattered(std::uint64_t offset, const iovec* parts, int count) const noexcept override {
        const long long got = file_.read_scattered(offset, parts, count);
        return got < 0 ? 0 : std::size_t(got);
    }

private:
    const io::InputFile& file_;
};

// The same, owning its file.
class OwnedFileSource final : public io::ByteSource {
public:
    explicit OwnedFileSource(const std::string& path) : file_(path), source_(file_) {}
    std::uint64_t size() const override { return source_.size(); }
    std::size_t read(std::uint64_t offset, void* dst, std::size_t n) const noexcept override {
        return source_.read(offset, dst, n);
    }
    std::size_t read_scattered(std::uint64_t offset, const iovec* parts, int count) const noexcept override {
        return source_.read_scattered(offset, parts, count);
    }

private:
    io::InputFile file_;
    FileSource source_;
};

// Only a TIFF and a FITS cube have pages beyond the first.
void check_page(Magic magic, const std::string& name, const ReadOptions& options) {
    if (options.page > 0 && !has_pages(magic) && magic != Magic::unknown)
        fail(name, "no page " + std::to_string(options.page) + " (only a TIFF or a FITS cube holds several images)");
}

ImageShape probe_source(const io::ByteSource& source, const std::string& name, const ReadOptions& options) {
    const io::Buffer first = io::read_prefix(source, 8);
    check_page(magic_of(first), name, options);
    switch (magic_of(first)) {
    case Magic::pnm: return io::probe_pnm(source, name, options);
    case Magic::pfm: return io::probe_pfm(source, name, options);
    case Magic::png: return io::probe_png(source, name, options);
    case Magic::jpeg: return io::probe_jpeg(source, name, options);
    case Magic::tiff:
#if APRON_HAVE_TIFF
        return io::probe_tiff(source, name, options);
#else
        tiff_not_built(name);
#endif
    case Magic::fits:
#if APRON_HAVE_FITS
        return io::probe_fits(source, name, options);
#else
        fits_not_built(name);
#endif
    case Magic::unknown: break;
    }
    unknown_format(first, name);
}

ImageMetadata metadata_by_format(const io::ByteSource& source, const std::string& name, const ReadOptions& options) {
    switch (magic_of(io::read_prefix(source, 8))) {
    case Magic::png: return io::metadata_png(source, name);
    case Magic::jpeg: return io::metadata_jpeg(source, name);
    case Magic::tiff:
#if APRON_HAVE_TIFF
        return io::metadata_tiff(source, name, options);
#else
        break;
#endif
    case Magic::fits:
#if APRON_HAVE_FITS
        return io::metadata_fits(source, name, options);
#else
        break;
#endif
    case Magic::pnm:
    case Magic::pfm:
    case Magic::unknown: break;
    }
    return {};
}

// A damaged profile or Exif block is left out; the image's own reader judges the file. The orientation is
// the format's own (a TIFF tag) or the Exif block's.
ImageMetadata metadata_of_source(const io::ByteSource& source, const std::string& name, const ReadOptions& options) {
    try {
        ImageMetadata m = metadata_by_format(source, name, options);
        io::drop_bad_exif_orientation(m.exif);  // never copied into an output
        m.orientation = io::orientation_of(m);
        return m;
    } catch (const Error&) {
        return {};
    }
}


// `read(source, path, options)` on the file at `path`, read on demand (the header's bytes only), once the
// file's size is within the budget.
template <class Read>
auto read_file_header(const std::string& path, const ReadOptions& options, Read read) {
    const io::InputFile file(path);
    io::check_file_budget(path, file.size(), options);
    return read(FileSource(file), path, options);
}

}  // namespace

std::unique_ptr<io::ByteSource> io::open_file_source(const std::string& path) {
    return std::make_unique<OwnedFileSource>(path);
}

Image decode_image(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options) {
    check_page(magic_of(bytes), name, options);
    switch (magic_of(bytes)) {
    case Magic::pnm: return io::decode_pnm(bytes, name, options);
    case Magic::pfm: return io::decode_pfm(bytes, name, options);
    case Magic::png: return io::decode_png(bytes, name, options);
    case Magic::jpeg: return io::decode_jpeg(bytes, name, options);
    case Magic::tiff:
#if APRON_HAVE_TIFF
        return io::decode_tiff(bytes, name, options);
#else
        tiff_not_built(name);
#endif
    case Magic::fits:
#if APRON_HAVE_FITS
        return io::decode_fits(bytes, name, options);
#else
        fits_not_built(name);
#endif
    case Magic::unknown: break;
    }
    unknown_format(bytes, name);
}

// The file is never copied whole into memory where its format can do without: binary PNM, PFM and
// uncompressed FITS rows are read straight into the image (several threads at once), PNG, JPEG and TIFF
// decode from reads of the file as their decoders ask. Only ASCII and bitmap Netpbm files and tile-compressed
// FITS images are read whole, then parsed.
Image read_image(const std::string& path, const ReadOptions& options) {
    const io::InputFile file(path);
    io::check_file_budget(path, file.size(), options);
    const FileSource source(file);
    const io::Buffer first = io::read_prefix(source, 8);
    const Magic magic = magic_of(first);
    check_page(magic, path, options);
    switch (magic) {
    case Magic::pnm:
        if (first[1] >= '5') return io::decode_binary_pnm(source, path, options);
        break;
    case Magic::pfm: return io::decode_pfm(source, path, options);
    case Magic::png: return io::decode_png(source, path, options);
    case Magic::jpeg: return io::decode_jpeg(source, path, options);
    case Magic::tiff:
#if APRON_HAVE_TIFF
        return io::decode_tiff(source, path, options);
#else
        tiff_not_built(path);
#endif
    case Magic::fits:
#if APRON_HAVE_FITS
        return io::decode_fits(source, path, options);
#else
        fits_not_built(path);
#endif
    case Magic::unknown: unknown_format(first, path);
    }
    const std::string bytes = file.read_all();
    return decode_image({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, path, options);
}

namespace {

// The pages of a file: a TIFF's through `tiff`, a FITS cube's through `fits` (each refused where its support
// is not built), any other format's one image through `single`, which reads it as page 0 (`one`).
template <class Tiff, class Fits, class Single>
auto by_pages(Magic magic, [[maybe_unused]] const std::string& name, const ReadOptions& options, Tiff&& tiff, Fits&& fits,
              Single&& single) {
    if (magic == Magic::tiff) {
#if APRON_HAVE_TIFF
        return tiff();
#else
        tiff_not_built(name);
#endif
    }
    if (magic == Magic::fits) {
#if APRON_HAVE_FITS
        return fits();
#else
        fits_not_built(name);
#endif
    }
    ReadOptions one = options;
    one.page = 0;
    return single(one);
}

} // namespace

std::vector<Image> read_pages(const std::string& path, const ReadOptions& options) {
    // A TIFF's pages and a FITS cube's planes decode from reads of the file (no copy of it); any other format is
    // read_image's one page.
    const io::InputFile file(path);
    io::check_file_budget(path, file.size(), options);
    const FileSource source(file);
    return by_pages(
        magic_of(io::read_prefix(source, 8)), path, options, [&] { return io::decode_tiff_pages(source, path, options); },
        [&] { return io::decode_fits_pages(source, path, options); },
        [&](const ReadOptions& one) {
            std::vector<Image> pages;
            pages.push_back(read_image(path, one));  // Image moves only
            return pages;
        });
}

int count_pages(const std::string& path, const ReadOptions& options) {
    return read_file_header(path, options, [](const io::ByteSource& source, const std::string& name, const ReadOptions& o) {
        return by_pages(
            magic_of(io::read_prefix(source, 8)), name, o, [&] { return io::count_tiff_pages(source, name, o); },
            [&] { return io::count_fits_pages(source, name, o); }, [](const ReadOptions&) { return 1; });
    });
}

std::vector<ImageShape> probe_pages(const std::string& path, const ReadOptions& options) {
    return read_file_header(path, options, [](const io::ByteSource& source, const std::string& name, const ReadOptions& o) {
        return by_pages(
            magic_of(io::read_prefix(source, 8)), name, o, [&] { return io::probe_tiff_pages(source, name, o); },
            [&] { return io::probe_fits_pages(source, name, o); },
            [&](const ReadOptions& one) { return std::vector<ImageShape>{probe_source(source, name, one)}; });
    });
}

std::vector<ImageMetadata> read_pages_metadata(const std::string& path, const ReadOptions& options) {
    return read_file_header(path, options, [](const io::ByteSource& source, const std::string& name, const ReadOptions& o) {
        const Magic magic = magic_of(io::read_prefix(source, 8));
        if (magic == Magic::tiff) {
#if APRON_HAVE_TIFF
            try {
                std::vector<ImageMetadata> pages = io::metadata_tiff_pages(source, name, o);
                for (ImageMetadata& m : pages) {
                    io::drop_bad_exif_orientation(m.exif);
                    m.orientation = io::orientation_of(m);
                }
                return pages;
            } catch (const Error&) {
                // metadata is a courtesy: read_pages judges the file
            }
#endif
        }
        if (magic == Magic::fits) {
#if APRON_HAVE_FITS
            try {
                // One header for every plane of a cube.
                return std::vector<ImageMetadata>(std::size_t(io::count_fits_pages(source, name, o)), io::metadata_fits(source, name, o));
            } catch (const Error&) {
                // as above
            }
#endif
        }
        return std::vector<ImageMetadata>{metadata_of_source(source, name, o)};
    });
}

void write_pages(const std::string& path, std::span<const ConstImageView> pages, const WriteOptions& options,
                 std::span<const ImageMetadata> metadata) {
    if (pages.empty()) fail(path, "no pages to write");
    if (!metadata.empty() && metadata.size() != pages.size())
        fail(path, "write_pages: " + std::to_string(metadata.size()) + " metadata for " + std::to_string(pages.size()) + " pages");
    const ImageFormat format = format_for_path(path);
    if (pages.size() == 1) {
        WriteOptions one = options;
        if (!metadata.empty()) one.metadata = metadata[0];
        return write_image(path, pages[0], one);
    }
    if (format != ImageFormat::tiff && format != ImageFormat::fits)
        fail(path, std::string(to_string(format)) + " holds one image, and there are " + std::to_string(pages.size()) +
                       " pages (write .tif, or .fits for planes of one size and type, to keep them all)");
    std::vector<ImageMetadata> each;
    for (std::size_t p = 0; p < pages.size(); ++p) {
        const std::string name = path + " (page " + std::to_string(p) + ")";
        const ConstImageView& image = pages[p];
        if (image.memory != Memory::host) fail(name, "image is in device memory; copy it to the host before writing");
        if (!image.data || image.empty()) fail(name, "cannot write an empty image");
        validate_shape(image.shape, name.c_str());
        if (image.pitch < image.shape.row_bytes()) fail(name, "image view has a row pitch smaller than a row");
        each.push_back(metadata.empty() ? options.metadata : metadata[p]);
    }
    if (format == ImageFormat::fits) return write_file_atomically(path, io::encode_fits_pages(pages, each[0], path, options));
    write_file_atomically(path, io::encode_tiff_pages(pages, each, path, options));
}

ImageFormat format_of_file(const std::string& path) {
    const io::InputFile file(path);
    const FileSource source(file);
    const io::Buffer first = io::read_prefix(source, 8);
    switch (magic_of(first)) {
    case Magic::pnm: return ImageFormat::pnm;
    case Magic::pfm: return ImageFormat::pfm;
    case Magic::png: return ImageFormat::png;
    case Magic::jpeg: return ImageFormat::jpeg;
    case Magic::tiff:
#if APRON_HAVE_TIFF
        return ImageFormat::tiff;
#else
        tiff_not_built(path);
#endif
    case Magic::fits:
#if APRON_HAVE_FITS
        return ImageFormat::fits;
#else
        fits_not_built(path);
#endif
    case Magic::unknown: break;
    }
    unknown_format(first, path);
}

ImageShape probe_image(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options) {
    return probe_source(io::MemorySource(bytes), name, options);
}

ImageShape probe_image(const std::string& path, const ReadOptions& options) {
    return read_file_header(path, options, probe_source);
}

ImageMetadata read_metadata(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options) {
    return metadata_of_source(io::MemorySource(bytes), name, options);
}

ImageMetadata read_metadata(const std::string& path, const ReadOptions& options) {
    return read_file_header(path, options, metadata_of_source);
}

namespace {

// What every writer refuses of a view before encoding it.
void check_writable(ImageFormat format, ConstImageView image, const std::string& name) {
    if (image.memory != Memory::host) fail(name, "image is in device memory; copy it to the host before writing");
    if (!image.data || image.empty()) fail(name, "cannot write an empty image");
    validate_shape(image.shape, name.c_str());
    if (image.pitch < image.shape.row_bytes()) fail(name, "image view has a row pitch smaller than a row");
    std::string why;
    if (!can_store(format, image.shape, &why))
        fail(name, std::string("cannot write a ") + to_string(image.type()) + " image with " +
                       std::to_string(image.channels()) + " channel(s): " + why);
}

}  // namespace

std::vector<std::uint8_t> encode_image(ImageFormat format, ConstImageView image, const std::string& name,
                                       const WriteOptions& options) {
    check_writable(format, image, name);
    switch (format) {
    case ImageFormat::pnm: return io::encode_pnm(image, name, options);
    case ImageFormat::pfm: return io::encode_pfm(image, name, options);
    case ImageFormat::png: return io::encode_png(image, name, options);
    case ImageFormat::jpeg: return io::encode_jpeg(image, name, options);
    case ImageFormat::tiff: return io::encode_tiff(image, name, options);
    case ImageFormat::fits: return io::encode_fits(image, name, options);
    }
    fail(name, "unknown image format");
}

void write_image(const std::string& path, ConstImageView image, const WriteOptions& options) {
    io::refuse_directory(path);  // `apron filter in.png outdir`: a directory, rather than a name without extension
    const ImageFormat format = format_for_path(path);
    // Binary PNM and PFM: rows at fixed offsets, written from the image itself (no encoded copy), in parallel.
    if ((format == ImageFormat::pnm && !options.pnm_ascii) || format == ImageFormat::pfm) {
        check_writable(format, image, path);
        return io::write_fixed_rows_file(format, path, image);
    }
    const std::vector<std::uint8_t> bytes = encode_image(format, image, path, options);
    write_file_atomically(path, bytes);
}

}  // namespace apron

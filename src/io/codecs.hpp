#pragma once
// Internal interface between the dispatch (image_file.cpp) and the per-format codecs. Each decoder gets
// the whole file in memory and the name to put in errors; each encoder gets a host view that the
// dispatch has already checked with can_store(), so encoders only re-check what they alone know.
//
// Every decoder reads the header first, into the shape of the image it will produce and the image-sized
// buffers it needs besides the image; the prober (probe_image) stops there, the decoder goes on. Both pass
// through check_image, so the pixel limit and the memory budget are checked the same way, for every
// format, before a pixel is allocated.
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "apron/errors.hpp"
#include "apron/image.hpp"
#include "apron/io.hpp"
#include "apron/volume_io.hpp"

namespace apron::io {

using Bytes = std::span<const std::uint8_t>;
using Buffer = std::vector<std::uint8_t>;

// Where a header is read from: the file in memory (decoding) or an open file read on demand (probing
// reads only the bytes the header needs). read() never throws, so libpng/libjpeg/libtiff callbacks may
// call it.
class ByteSource {
public:
    virtual ~ByteSource() = default;
    virtual std::uint64_t size() const = 0;
    // Up to n bytes at `offset`; fewer only at the end of the file or on a read error.
    virtual std::size_t read(std::uint64_t offset, void* dst, std::size_t n) const noexcept = 0;
    // The whole file when it is in memory, else empty.
    virtual Bytes memory() const { return {}; }
    // Bytes from `offset` on into `count` buffers in order (a file: one preadv); the bytes read, fewer only
    // at the end of the file or on a read error.
    virtual std::size_t read_scattered(std::uint64_t offset, const iovec* parts, int count) const noexcept;
};

class MemorySource final : public ByteSource {
public:
    explicit MemorySource(Bytes bytes) : bytes_(bytes) {}
    std::uint64_t size() const override { return bytes_.size(); }
    std::size_t read(std::uint64_t offset, void* dst, std::size_t n) const noexcept override;
    Bytes memory() const override { return bytes_; }

private:
    Bytes bytes_;
};

// The first bytes of `source` (all of them if it is shorter than n).
Buffer read_prefix(const ByteSource& source, std::size_t n);

// Text headers (PNM, PAM, PFM) have no length field: they are parsed from a prefix of the file that grows
// fourfold while the parse fails or runs into the prefix's end before the file's. `parse(prefix)` returns
// its result and how many bytes of the prefix it used.
template <class Parse>
auto parse_from_prefix(const ByteSource& source, Parse parse) {
    if (const Bytes whole = source.memory(); !whole.empty()) return parse(whole).first;
    for (std::size_t n = 4096;; n *= 4) {
        const Buffer prefix = read_prefix(source, n);
        const bool whole = prefix.size() >= source.size();
        try {
            auto [result, used] = parse(Bytes(prefix));
            if (whole || used < prefix.size()) return result;
        } catch (const Error&) {
            if (whole) throw;
        }
    }
}

// Image-sized memory a decoder holds besides the image while it decodes: the file itself, and any
// buffer of its own (a whole-image strip or tile, JPEG's coefficients of a progressive file).
struct Held {
    std::uint64_t file_bytes = 0;
    std::uint64_t decoder_bytes = 0;
    std::uint64_t pages_bytes = 0;  // the pages of a multi-page file decoded before this one (read_pages)
};

// Where the samples of a binary Netpbm-family file lie, for reading rows straight from the file
// (row_stream.cpp): rows of shape.row_bytes() from `data_offset`, bottom to top when `bottom_up` (PFM), and
// wide samples in `byte_order`. Binary PNM (P5/P6/P7) and PFM only: other kinds refuse by name.
struct FixedRows {
    ImageShape shape;
    std::uint64_t data_offset = 0;
    bool bottom_up = false;
    ByteOrder byte_order = ByteOrder::big;
    // PNM: a maxval below the type's largest value (255 or 65535), which every sample read must respect as
    // the whole-image reader checks it; 0: nothing to check.
    std::uint32_t maxval = 0;
    // FITS unsigned 16-bit samples, stored signed with BZERO 32768: the top bit of every u16 sample read is
    // flipped (v + 32768 modulo 2^16).
    bool offset_binary = false;
};
// Refuses a sample of `rows` (native order, rows y0 and on of the image) above `maxval`, in the words of the
// whole-image PNM reader.
void check_pnm_samples(const std::string& name, ConstImageView rows, int y0, std::uint32_t maxval);
FixedRows pnm_fixed_rows(const ByteSource& source, const std::string& name, const ReadOptions& options);
FixedRows pfm_fixed_rows(const ByteSource& source, const std::string& name, const ReadOptions& options);
// Rows [y0, y0 + band.height()) of a file laid out as `layout` straight into `band` (native byte order, a
// PNM's maxval checked), in parts of about 4 MiB read by up to `threads` threads at once: a part is one
// pread into the band where its rows lie there one after the other as in the file, else one preadv that
// scatters them into the band's rows (padded rows, PFM's bottom-up rows). Throws "NAME: cannot read rows
// A-B: the file is truncated or unreadable", or the maxval's refusal of the first bad sample.
void read_fixed_rows(const ByteSource& file, const std::string& name, const FixedRows& layout, int y0, ImageView band,
                     int threads);
// Threads that read or write one image's rows at fixed offsets: one per usable core, at most 8.
int io_threads_for_whole_images();

// A file read on demand (pread through InputFile), for probing and for reading rows.
std::unique_ptr<ByteSource> open_file_source(const std::string& path);

class RowSource;
// TIFF rows decoded from the file on demand, one row of tiles (or one strip) cached (tiff.cpp).
std::unique_ptr<RowSource> open_tiff_rows(std::unique_ptr<ByteSource> file, const std::string& name,
                                          const ReadOptions& options);
// PNG rows decoded on demand with a few recent rows kept (png_rows.cpp); null for an interlaced file, whose
// rows come only after the last Adam7 pass (the caller decodes it whole).
std::unique_ptr<RowSource> open_png_rows(std::unique_ptr<ByteSource> file, const std::string& name,
                                         const ReadOptions& options);

// FITS rows at fixed offsets (an uncompressed image or cube plane, options.page as read_image takes it),
// read straight from the file as read_image reads them (fits.cpp); null for a tile-compressed image, which
// cfitsio decompresses whole (the caller decodes it whole).
std::unique_ptr<RowSource> open_fits_rows(std::unique_ptr<ByteSource> file, const std::string& name,
                                          const ReadOptions& options, int threads);

Image decode_pnm(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_pfm(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_png(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_jpeg(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_tiff(Bytes bytes, const std::string& name, const ReadOptions& options);
Image decode_fits(Bytes bytes, const std::string& name, const ReadOptions& options);

// The same, from a file read on demand (read_image): no copy of the whole file is made. Binary PNM (P5,
// P6, P7) and PFM read their rows straight into the image, in parallel parts (read_fixed_rows); PNG, JPEG and
// TIFF decode from reads of the file as their decoders ask for bytes (a whole-image strip of a TIFF is then
// the one buffer besides the image, counted as the file was). Errors and limits as decode_X's, except
// that the file is not held in memory: a PNM or PFM counts only its pixels against the budget.
Image decode_binary_pnm(const ByteSource& file, const std::string& name, const ReadOptions& options);
Image decode_pfm(const ByteSource& file, const std::string& name, const ReadOptions& options);
Image decode_png(const ByteSource& file, const std::string& name, const ReadOptions& options);
Image decode_jpeg(const ByteSource& file, const std::string& name, const ReadOptions& options);
Image decode_tiff(const ByteSource& file, const std::string& name, const ReadOptions& options);
// FITS: an uncompressed image's rows straight from the file (as binary PNM's); a tile-compressed one reads
// the file whole and lets cfitsio decompress it.
Image decode_fits(const ByteSource& file, const std::string& name, const ReadOptions& options);

// The shape decode_X would return, from the header alone, after check_image.
ImageShape probe_pnm(const ByteSource& source, const std::string& name, const ReadOptions& options);
ImageShape probe_pfm(const ByteSource& source, const std::string& name, const ReadOptions& options);
ImageShape probe_png(const ByteSource& source, const std::string& name, const ReadOptions& options);
ImageShape probe_jpeg(const ByteSource& source, const std::string& name, const ReadOptions& options);
ImageShape probe_tiff(const ByteSource& source, const std::string& name, const ReadOptions& options);
ImageShape probe_fits(const ByteSource& source, const std::string& name, const ReadOptions& options);

// Multi-page TIFF: every page (decode_tiff_pages: the file and every page within options.memory_budget),
// the number of pages, every page's metadata, and pages written as one directory each.
std::vector<Image> decode_tiff_pages(const ByteSource& file, const std::string& name, const ReadOptions& options);
int count_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options);
std::vector<ImageShape> probe_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options);
std::vector<ImageMetadata> metadata_tiff_pages(const ByteSource& source, const std::string& name, const ReadOptions& options);
Buffer encode_tiff_pages(std::span<const ConstImageView> pages, std::span<const ImageMetadata> metadata,
                         const std::string& name, const WriteOptions& options);
// TIFF band stacks (apron/volume_io.hpp): a page's band layout and stack shape (bands 0 for 1-4 samples, or
// page -1 of a file of several pages), its bands as one-channel planes, and planes written as the bands of
// one page with options.metadata.
TiffBands probe_tiff_bands(const ByteSource& source, const std::string& name, const ReadOptions& options);
Image decode_tiff_bands(const ByteSource& file, const std::string& name, const ReadOptions& options);
Buffer encode_tiff_bands(ConstImageView stack, const TiffBands& layout, const std::string& name, const WriteOptions& options);

// FITS cubes: every plane (as pages), their number (NAXIS3, 1 for an image), their shapes, and the header's
// metadata (one header: every plane's), from fits.cpp; planes of one shape and type written as one cube
// whose header carries `metadata`'s FITS cards.
std::vector<Image> decode_fits_pages(const ByteSource& file, const std::string& name, const ReadOptions& options);
// Every plane of a FITS file (NAXIS3, or an image's one) as the planes of one volume, through one open of the
// file and one parse of its header, with read_image's checks of each plane and check_volume's of the whole.
Image decode_fits_volume(const ByteSource& file, const std::string& name, const ReadOptions& options);
int count_fits_pages(const ByteSource& source, const std::string& name, const ReadOptions& options);
std::vector<ImageShape> probe_fits_pages(const ByteSource& source, const std::string& name, const ReadOptions& options);
ImageMetadata metadata_fits(const ByteSource& source, const std::string& name, const ReadOptions& options);
Buffer encode_fits_pages(std::span<const ConstImageView> pages, const ImageMetadata& metadata, const std::string& name,
                         const WriteOptions& options);

// The colour profile and Exif block of a file (and a TIFF's orientation tag), from its segments before the
// pixels (read_metadata takes the orientation from the Exif block otherwise); errors as the decoder's, for a
// file it would refuse from its header.
ImageMetadata metadata_png(const ByteSource& source, const std::string& name);
ImageMetadata metadata_jpeg(const ByteSource& source, const std::string& name);
ImageMetadata metadata_tiff(const ByteSource& source, const std::string& name, const ReadOptions& options);

Buffer encode_pnm(ConstImageView image, const std::string& name, const WriteOptions& options);
// The header encode_pnm writes for an image of `shape` (P5/P6, or P2/P3 when ascii; maxval 255 or 65535).
std::string pnm_header(const ImageShape& shape, bool ascii);
Buffer encode_pfm(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_png(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_jpeg(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_tiff(ConstImageView image, const std::string& name, const WriteOptions& options);
Buffer encode_fits(ConstImageView image, const std::string& name, const WriteOptions& options);

// Binary PNM (P5/P6, as encode_pnm without pnm_ascii) and PFM (as encode_pfm) written straight from the
// image's rows into the file, atomically (write_file_atomically_with): the header, then parts of about
// 4 MiB of rows, each one pwrite (pwritev for padded or bottom-up rows; 16-bit PNM samples are swapped
// into a buffer of the part's size), by up to io_threads_for_whole_images() threads. The same bytes as
// encode_X; no encoded copy of the image is made.
void write_fixed_rows_file(ImageFormat format, const std::string& path, ConstImageView image);

// Checks a size read from a file header against the reader's limits (positive, at most INT_MAX a side,
// at most options.max_pixels) and returns width * height. Sizes arrive as 64-bit so that a header
// promising 4e9 x 4e9 pixels is refused, not wrapped around.
std::uint64_t check_size(const std::string& name, std::uint64_t width, std::uint64_t height,
                         const ReadOptions& options);
// check_size, then the memory budget: the file, the decoder's own buffers and the image's pixels (rows
// as Image pads them) together must fit options.memory_budget (when not 0). Returns the shape.
ImageShape check_image(const std::string& name, std::uint64_t width, std::uint64_t height, int channels,
                       PixelType type, const ReadOptions& options, const Held& held);
// check_image, then allocates the image (an allocation failure names the file too).
Image allocate_image(const std::string& name, std::uint64_t width, std::uint64_t height, int channels, PixelType type,
                     const ReadOptions& options, const Held& held);
// Bytes of the pixels of an Image of this shape (rows padded as Image pads them).
std::uint64_t image_bytes(std::uint64_t width, std::uint64_t height, int channels, PixelType type);
// A file that a decoder holds whole must fit options.memory_budget (when not 0) by itself: refused before it
// is read, in the words every reader uses.
void check_file_budget(const std::string& name, std::uint64_t file_bytes, const ReadOptions& options);
// The limits of a volume read whole (read_volume; `shape` with its depth, the planes already checked one by
// one): a valid shape, its voxels within options.max_pixels, and its bytes, with what the decoder holds
// besides (`held`: a compressed FITS file), within options.memory_budget (volume_io.cpp).
void check_volume(const std::string& name, const ImageShape& shape, const ReadOptions& options, const Held& held = {});
// The volume of that shape, in options.memory (an allocation failure names the file).
Image allocate_volume(const std::string& name, const ImageShape& shape, const ReadOptions& options);

// Byte order helpers: files carry a fixed order, memory holds native order.
inline void swap_bytes_16(std::uint8_t* p, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i, p += 2) std::swap(p[0], p[1]);
}
inline void swap_bytes_32(std::uint8_t* p, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i, p += 4) {
        std::swap(p[0], p[3]);
        std::swap(p[1], p[2]);
    }
}

}  // namespace apron::io

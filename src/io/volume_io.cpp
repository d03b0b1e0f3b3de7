// Volumes in files: the pages of a TIFF or the planes of a FITS cube as one volume's planes, and the bands of a
// TIFF page of more than 4 samples as a band stack's (apron/volume_io.hpp).
#include "apron/volume_io.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

#include "apron/errors.hpp"
#include "apron/memory.hpp"
#include "io/codecs.hpp"
#include "io/output_target.hpp"

namespace apron {

namespace {

std::string shape_text(const ImageShape& s) {
    return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" + std::to_string(s.channels) + " " + to_string(s.type);
}

// Classic TIFF and BigTIFF, either byte order, from the file's first bytes.
bool is_tiff(const io::ByteSource& file) {
    const io::Buffer b = io::read_prefix(file, 4);
    return b.size() == 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                             (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43)));
}

// FITS: the keyword SIMPLE of the primary header's first card, as read_image tells a FITS file.
bool is_fits(const io::ByteSource& file) {
    const io::Buffer b = io::read_prefix(file, 8);
    return b.size() == 8 && std::memcmp(b.data(), "SIMPLE  ", 8) == 0;
}

} // namespace

void io::check_volume(const std::string& name, const ImageShape& shape, const ReadOptions& options, const Held& held) {
    validate_shape(shape, name.c_str());
    if (options.max_pixels && shape.pixels() > options.max_pixels)
        fail(name, "a volume of " + std::to_string(shape.pixels()) + " voxels is over --max-pixels (" +
                       std::to_string(options.max_pixels) + ")");
    const std::uint64_t bytes = std::uint64_t(shape.row_bytes()) * std::uint64_t(shape.rows());
    const std::uint64_t besides =
        held.decoder_bytes > UINT64_MAX - held.file_bytes ? UINT64_MAX : held.file_bytes + held.decoder_bytes;
    if (options.memory_budget && (bytes > options.memory_budget || besides > options.memory_budget - bytes))
        fail(name, "a volume of " + format_bytes(bytes) +
                       (besides ? " (and " + format_bytes(besides) + " of the file and its decoder's buffers)" : "") +
                       " is over the memory budget of " + format_bytes(options.memory_budget) +
                       " (raise --memory; raw volumes stream in slabs: --raw WxHxDxC)");
}

Image io::allocate_volume(const std::string& name, const ImageShape& shape, const ReadOptions& options) {
    try {
        return Image(shape, options.memory);
    } catch (const Error& e) {
        fail(name, e.what());  // the allocation's own message names "image", not the file
    }
}

TiffBands probe_bands(const std::string& path, const ReadOptions& options) {
    const std::unique_ptr<io::ByteSource> file = io::open_file_source(path);
    return is_tiff(*file) ? io::probe_tiff_bands(*file, path, options) : TiffBands{};
}

Image read_bands(const std::string& path, const ReadOptions& options) {
    const std::unique_ptr<io::ByteSource> file = io::open_file_source(path);
    if (!is_tiff(*file)) fail(path, "not a TIFF file (a band stack is a TIFF page of more than 4 samples per pixel)");
    return io::decode_tiff_bands(*file, path, options);
}

void write_bands(const std::string& path, ConstImageView stack, const TiffBands& layout, const WriteOptions& options) {
    io::refuse_directory(path);
    if (format_for_path(path) != ImageFormat::tiff)
        fail(path, "a band stack is written as the bands of one TIFF page (.tif, .tiff); write_volume writes its planes as pages "
                   "or a FITS cube");
    if (stack.memory != Memory::host) fail(path, "image is in device memory; copy it to the host before writing");
    if (!stack.data || stack.empty()) fail(path, "cannot write an empty image");
    validate_shape(stack.shape, path.c_str());
    if (stack.pitch < stack.shape.row_bytes()) fail(path, "image view has a row pitch smaller than a row");
    if (stack.channels() != 1)
        fail(path, "a band stack's planes have one channel each (its bands), and these have " + std::to_string(stack.channels()));
    if (layout.bands != 0 && layout.bands != stack.shape.depth)
        fail(path, "the layout is of " + std::to_string(layout.bands) + " bands, and the stack has " + std::to_string(stack.shape.depth) +
                       " planes");
    if (stack.shape.depth > 65535) fail(path, std::to_string(stack.shape.depth) + " bands: a TIFF page holds at most 65535 samples per pixel");
    write_file_atomically(path, io::encode_tiff_bands(stack, layout, path, options));
}

Image read_volume(const std::string& path, const ReadOptions& options) {
    if (options.page != -1) fail(path, "a volume is every page of the file (no page is chosen)");
    {
        // A FITS cube through one open of the file (a read of each plane as an image of its own would open
        // the file and parse its header again for every plane, and read a compressed file whole every time).
        const std::unique_ptr<io::ByteSource> file = io::open_file_source(path);
        if (is_fits(*file)) {
            io::check_file_budget(path, file->size(), options);
            return io::decode_fits_volume(*file, path, options);
        }
    }
    if (probe_bands(path, options).bands > 0) return read_bands(path, options);  // a TIFF of one page of its bands
    const std::vector<ImageShape> pages = probe_pages(path, options);
    if (pages.empty()) fail(path, "holds no image");
    for (std::size_t z = 1; z < pages.size(); ++z)
        if (!(pages[z] == pages[0]))
            fail(path, "page " + std::to_string(z) + " is " + shape_text(pages[z]) + " where page 0 is " + shape_text(pages[0]) +
                           ": a volume's planes share one size and type (filter the pages apart instead: without --volume)");
    ImageShape shape = pages[0];
    shape.depth = int(pages.size());
    io::check_volume(path, shape, options);
    Image volume = io::allocate_volume(path, shape, options);
    // A TIFF page by page: the volume and one page at a time, not every page twice.
    for (int z = 0; z < shape.depth; ++z) {
        ReadOptions one = options;
        one.page = z;
        one.memory_budget = 0;  // the volume's bytes were checked above
        const Image page = read_image(path, one);
        if (!(page.shape() == pages[0])) fail(path, "the file changed while it was read (page " + std::to_string(z) + ")");
        const ImageView plane = volume.view().plane(z);
        for (int y = 0; y < shape.height; ++y) std::memcpy(plane.row_bytes(y), page.view().row_bytes(y), shape.row_bytes());
    }
    return volume;
}

void write_volume(const std::string& path, ConstImageView volume, const WriteOptions& options,
                  std::span<const ImageMetadata> metadata) {
    const ImageFormat format = format_for_path(path);
    if (format != ImageFormat::tiff && format != ImageFormat::fits)
        fail(path, "a volume is written as a multi-page TIFF (.tif, .tiff) or a FITS cube (.fits); raw samples stream (--raw WxHxDxC)");
    std::vector<ConstImageView> planes;
    for (int z = 0; z < volume.shape.depth; ++z) planes.push_back(volume.plane(z));
    std::vector<ImageMetadata> each(planes.size());
    for (std::size_t z = 0; z < each.size() && z < metadata.size(); ++z) each[z] = metadata[z];
    write_pages(path, planes, options, each);
}

} // namespace apron

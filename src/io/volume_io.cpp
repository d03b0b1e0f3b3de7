// Volumes in files: the pages of a TIFF or the planes of a FITS cube as one volume's planes (apron/volume_io.hpp).
#include "apron/volume_io.hpp"

#include <cstring>
#include <vector>

#include "apron/errors.hpp"
#include "apron/memory.hpp"

namespace apron {

namespace {

std::string shape_text(const ImageShape& s) {
    return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" + std::to_string(s.channels) + " " + to_string(s.type);
}

} // namespace

Image read_volume(const std::string& path, const ReadOptions& options) {
    if (options.page != -1) fail(path, "a volume is every page of the file (no page is chosen)");
    const std::vector<ImageShape> pages = probe_pages(path, options);
    if (pages.empty()) fail(path, "holds no image");
    for (std::size_t z = 1; z < pages.size(); ++z)
        if (!(pages[z] == pages[0]))
            fail(path, "page " + std::to_string(z) + " is " + shape_text(pages[z]) + " where page 0 is " + shape_text(pages[0]) +
                           ": a volume's planes share one size and type (filter the pages apart instead: without --volume)");
    ImageShape shape = pages[0];
    shape.depth = int(pages.size());
    validate_shape(shape, path.c_str());
    if (options.max_pixels && shape.pixels() > options.max_pixels)
        fail(path, "a volume of " + std::to_string(shape.pixels()) + " voxels is over --max-pixels (" +
                       std::to_string(options.max_pixels) + ")");
    const std::uint64_t bytes = std::uint64_t(shape.row_bytes()) * std::uint64_t(shape.rows());
    if (options.memory_budget && bytes > options.memory_budget)
        fail(path, "a volume of " + format_bytes(bytes) + " is over the memory budget of " + format_bytes(options.memory_budget) +
                       " (raise --memory; raw volumes stream in slabs: --raw WxHxDxC)");
    Image volume(shape, options.memory);
    // Page by page: the volume and one page at a time, not every page twice.
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

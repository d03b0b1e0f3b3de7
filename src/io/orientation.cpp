// apply_orientation and mark_upright (include/apron/io.hpp): the eight Exif orientations. Pixels are moved
// whole (every channel and byte of one pixel together), so one loop serves every type and channel count.
#include <cstring>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "io/exif.hpp"

namespace apron {

namespace {

// Where output pixel (x, y) comes from in a stored image of w x h, for Exif orientation o: the stored
// picture is turned and flipped so that its top-left corner lands where the viewer puts it.
struct Source {
    int x, y;
};
Source source_of(int o, int x, int y, int w, int h) {
    switch (o) {
    case 2: return {w - 1 - x, y};          // mirrored left to right
    case 3: return {w - 1 - x, h - 1 - y};  // turned half round
    case 4: return {x, h - 1 - y};          // mirrored top to bottom
    case 5: return {y, x};                  // transposed
    case 6: return {y, h - 1 - x};          // to be turned a quarter clockwise
    case 7: return {w - 1 - y, h - 1 - x};  // transversed
    case 8: return {w - 1 - y, x};          // to be turned a quarter counter-clockwise
    default: return {x, y};
    }
}

}  // namespace

Image apply_orientation(ConstImageView image, int orientation, HostMemory memory) {
    if (orientation < 0 || orientation > 8)
        throw Error("orientation: " + std::to_string(orientation) + " is outside 0..8");
    if (image.memory != Memory::host) throw Error("apply_orientation: the image must be in host memory");
    const int w = image.width(), h = image.height();
    const bool swaps = orientation >= 5;
    Image out(swaps ? h : w, swaps ? w : h, image.channels(), image.type(), memory);
    const std::size_t pixel = image.shape.row_bytes() / std::size_t(w);
    for (int y = 0; y < out.height(); ++y) {
        auto* dst = reinterpret_cast<std::uint8_t*>(out.view().row_bytes(y));
        if (orientation <= 1 || orientation == 4) {  // whole rows, in order or upside down
            const Source s = source_of(orientation, 0, y, w, h);
            std::memcpy(dst, image.row_bytes(s.y), image.shape.row_bytes());
            continue;
        }
        for (int x = 0; x < out.width(); ++x) {
            const Source s = source_of(orientation, x, y, w, h);
            std::memcpy(dst + std::size_t(x) * pixel,
                        reinterpret_cast<const std::uint8_t*>(image.row_bytes(s.y)) + std::size_t(s.x) * pixel, pixel);
        }
    }
    return out;
}

void mark_upright(ImageMetadata& metadata) {
    metadata.orientation = 1;
    io::set_exif_orientation(metadata.exif, 1);  // a block without the entry already means "as stored"
}

void turn_upright(Image& image, ImageMetadata& metadata, HostMemory memory) {
    if (metadata.orientation < 2) return;
    image = apply_orientation(image, metadata.orientation, memory);  // the turned copy, then the old one is freed
    mark_upright(metadata);
}

}  // namespace apron

// Host-memory defaults of the Executor interface (the CPU backends use them as they are).
#include <cstring>

#include "apron/errors.hpp"
#include "plan/plan.hpp"

namespace apron {

Buffer Executor::allocate(const ImageShape& shape) {
    auto image = std::make_shared<Image>(shape);
    ImageView v = image->view();
    return Buffer{v, std::move(image)};
}

namespace {
void copy_rows(ConstImageView from, ImageView to) {
    if (!(from.shape == to.shape)) fail("copy", "image shapes differ");
    for (int y = 0; y < int(from.shape.rows()); ++y) std::memcpy(to.row_bytes(y), from.row_bytes(y), from.shape.row_bytes());
}
} // namespace

void Executor::upload(ConstImageView host, ImageView mine) { copy_rows(host, mine); }
void Executor::download(ConstImageView mine, ImageView host) { copy_rows(mine, host); }

} // namespace apron

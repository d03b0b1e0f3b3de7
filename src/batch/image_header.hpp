#pragma once
// What an image file decodes to, from its header alone: the batch reserves the memory of an image before it
// reads the file whole. apron::probe_image on the file's first bytes (every header apron reads fits in them);
// nullopt where they do not tell (a TIFF whose directory lies further on, a JPEG with large metadata before
// its frame, a corrupt header): the caller then reserves as much as an image may take, and decoding reports
// what is wrong.
#include <optional>

#include "apron/image.hpp"
#include "apron/io.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

std::optional<ImageShape> shape_from_header(const io::InputFile& file, const ReadOptions& read = {});

} // namespace apron::batch

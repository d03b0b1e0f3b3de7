#pragma once
// What an image file decodes to, from its header alone: the batch reserves the memory of an image before it
// reads the file whole. An upper bound where the header leaves it open (a palette PNG may or may not have
// alpha: counted as 4 channels; a TIFF's sample size when its bits are not inline: 4 bytes).
//
// Formats: PNM/PAM/PFM, PNG, JPEG (walking its segments to the frame header), classic TIFF (its first IFD).
// nullopt for anything else or anything it cannot make sense of (BigTIFF, a corrupt header): the caller then
// reserves as much as an image may take. (apron::probe_image answers the same question for every format;
// this is the batch's own until it is there.)
#include <optional>

#include "apron/image.hpp"
#include "batch/input_file.hpp"

namespace apron::batch {

std::optional<ImageShape> shape_from_header(const InputFile& file);

} // namespace apron::batch

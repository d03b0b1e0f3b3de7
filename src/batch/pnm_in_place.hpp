#pragma once
// Binary PNM (P5, P6, P7) as a batch meets it: the bytes after the header are the image's rows. Read into a
// pinned buffer, the image is a view of that buffer (the GPU copies it from there: no decode, no second
// copy), and a result is written from its own rows (no encoded copy of it). 16-bit samples are big-endian in
// the file: they are swapped in place, in the buffer the file was read into or in the result about to be
// freed.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "apron/image.hpp"
#include "apron/io.hpp"

namespace apron::batch {

// The image `file` holds, as a view of its bytes (16-bit samples turned to the host's order in place), or
// nullopt for what is not binary PNM with whole rows (ASCII PNM, bitmaps, PFM and other formats) and for a
// header the decoder refuses (a truncated file, an image over the pixel limit): decode those, so that every
// refusal is the decoder's, word for word. Throws the decoder's apron::Error for a sample above maxval.
std::optional<ImageView> pnm_in_place(std::span<std::uint8_t> file, const std::string& name, const ReadOptions& options);

// Whether write_pnm_in_place writes what encode_image would for this output.
bool writes_pnm_in_place(const std::string& path, const WriteOptions& options, const ImageShape& shape);
// Writes `image` as binary PNM to `path` atomically (as write_file_atomically), header then rows, handing
// each chunk of the file to `before_each` first. Changes `image`: 16-bit samples are swapped in place.
// Returns the file's size.
std::uint64_t write_pnm_in_place(const std::string& path, ImageView image,
                                 const std::function<void(std::span<const std::uint8_t>)>& before_each);

} // namespace apron::batch

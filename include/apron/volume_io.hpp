#pragma once
// Volumes in files (docs/volumes.md): a multi-page TIFF or OME-TIFF (every page a plane) or a FITS cube (every
// plane of NAXIS3) read as one volume, and written back the same way, each plane with its page's metadata.
//
//   apron::Image v = apron::read_volume("stack.ome.tif");              // depth = the pages
//   apron::Image f = apron::Pipeline({"gaussian:sigma=2,sigma_z=1"}).run(v);
//   apron::write_volume("blurred.ome.tif", f, {}, apron::read_pages_metadata("stack.ome.tif"));
#include <span>
#include <string>

#include "apron/image.hpp"
#include "apron/io.hpp"

namespace apron {

// Every page of `path` as the planes of one volume (ImageShape::depth = the pages). The pages must share one
// size, channel count and type (an error names the first that differs); the volume must fit
// options.memory_budget and options.max_pixels (its voxels). A file of one page is a volume of depth 1.
// options.page must be -1.
Image read_volume(const std::string& path, const ReadOptions& options = {});

// The volume's planes as the pages of `path` (a TIFF of one directory per plane, or a FITS cube; other
// formats are refused by name), `metadata[z]` with plane z (fewer: the rest without).
void write_volume(const std::string& path, ConstImageView volume, const WriteOptions& options = {},
                  std::span<const ImageMetadata> metadata = {});

} // namespace apron

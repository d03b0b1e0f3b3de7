#pragma once
// Volumes in files (docs/volumes.md): a multi-page TIFF or OME-TIFF (every page a plane) or a FITS cube (every
// plane of NAXIS3) read as one volume, and written back the same way, each plane with its page's metadata.
//
//   apron::Image v = apron::read_volume("stack.ome.tif");              // depth = the pages
//   apron::Image f = apron::Pipeline({"gaussian:sigma=2,sigma_z=1"}).run(v);
//   apron::write_volume("blurred.ome.tif", f, {}, apron::read_pages_metadata("stack.ome.tif"));
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apron/image.hpp"
#include "apron/io.hpp"

namespace apron {

// Every page of `path` as the planes of one volume (ImageShape::depth = the pages). The pages must share one
// size, channel count and type (an error names the first that differs); the volume must fit
// options.memory_budget and options.max_pixels (its voxels). A file of one page is a volume of depth 1, and a
// TIFF of one page of more than 4 bands its band stack (read_bands). options.page must be -1.
Image read_volume(const std::string& path, const ReadOptions& options = {});

// The volume's planes as the pages of `path` (a TIFF of one directory per plane, or a FITS cube; other
// formats are refused by name), `metadata[z]` with plane z (fewer: the rest without).
void write_volume(const std::string& path, ConstImageView volume, const WriteOptions& options = {},
                  std::span<const ImageMetadata> metadata = {});

// Band stacks: a TIFF page of more than 4 samples per pixel (multispectral imagery: Sentinel-2's 13 bands,
// hyperspectral cubes) holds more bands than an image's 4 channels, so it is read as the planes of a volume of
// one channel, band b plane b, in either planar configuration; a pipeline without steps along z filters each
// band alone, as a gray image of its own (docs/volumes.md, "Band stacks"). Interleaved 1-4 samples stay
// images (read_image).
//
//   const apron::TiffBands bands = apron::probe_bands("s2.tif");      // bands.bands == 13
//   apron::Image f = pipeline.run(apron::read_bands("s2.tif"));        // depth 13, 1 channel
//   apron::WriteOptions wo;
//   wo.metadata = apron::read_metadata("s2.tif");                      // GeoTIFF tags, resolution, ...
//   apron::write_bands("out.tif", f, bands, wo);                       // 13 bands, laid out as the input's

// How a TIFF page lays out its bands, to write a stack back alike, and the stack it reads as.
struct TiffBands {
    int bands = 0;          // samples per pixel; 0: not a band stack (not a TIFF, or 1-4 samples)
    ImageShape shape{};     // probe_bands: the stack (width, height, 1 channel, the bands' type, depth = bands)
    bool separate = false;  // PlanarConfiguration 2: each band in strips or tiles of its own (else interleaved)
    bool rgb = false;       // PhotometricInterpretation RGB (bands 0-2 red, green, blue), else min-is-black
    // ExtraSamples, one per band past the colour ones (0 unspecified, 1 associated alpha, 2 unassociated);
    // empty: all unspecified.
    std::vector<std::uint16_t> extra_samples;
};

// The band layout of the page options.page of `path` (-1: its only page), from its directory alone, with
// read_bands' refusals and limits: bands 0 for a file that is not a TIFF, a page of 1-4 samples, or page -1
// of a TIFF of several pages. Errors (a damaged TIFF, a page that is not there) as probe_image's.
TiffBands probe_bands(const std::string& path, const ReadOptions& options = {});
// The bands of that page as the planes of a volume of one channel (depth = bands; u8, u16, f32 and what
// read_image converts exactly; strips or tiles, any compression libtiff reads), within options.max_pixels
// (every band's samples) and options.memory_budget. A page of 1-4 samples is refused (read_image reads it).
Image read_bands(const std::string& path, const ReadOptions& options = {});
// The planes of `stack` (one channel) as the bands of one TIFF page: interleaved or separate and photometric
// as `layout` says (its band count, when given, must be the depth), with options.metadata's tags, as
// write_image writes them, and options' compression and tiles.
void write_bands(const std::string& path, ConstImageView stack, const TiffBands& layout, const WriteOptions& options = {});

} // namespace apron

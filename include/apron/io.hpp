#pragma once
// Image files. The format follows the file's content on read (magic bytes) and the extension on write:
// .pgm .ppm .pnm (Netpbm P2/P3/P5/P6), .pfm (Pf/PF), .png, .jpg/.jpeg, .tif/.tiff (when built with libtiff),
// .fits/.fit/.fts (when built with cfitsio; the content's magic is "SIMPLE  " at byte 0).
// Every reader refuses malformed, truncated or absurd files with an apron::Error naming the file.
// Every writer writes a temporary file beside the target and renames it, so no partial output remains.
//
// Reading. Only regular files are read (symbolic links are followed to one): a FIFO, a device such as
// /dev/zero, a socket or a directory is refused by name, before anything is read; so is a file that
// changes size while it is read (another program still writing it). With ReadOptions::memory_budget set,
// a file larger than the budget is refused before it is read, and before any pixel is allocated the
// header's size is checked: the file itself, the decoded pixels and any image-sized buffer of the decoder
// (a TIFF tile, the coefficients of a progressive JPEG) must fit in the budget together, so a small
// compressed file that decodes to gigabytes is refused with the bytes it would need. max_pixels is checked
// at the same point. probe_image applies the same checks from the header alone.
//
// Writing (write_file_atomically, so every image writer too):
//   - A new file gets mode 0666 less the umask; a file that is replaced keeps its permission bits (a 0600
//     file stays 0600), and its owner and group where the process may set them (root; others keep the
//     group when they belong to it).
//   - A symbolic link at the output path is followed: the link stays and the file it points to is replaced
//     (atomically, in the target's directory). A dangling link gets its target created, if the target's
//     directory exists.
//   - A file with several hard links is replaced by a new file under the name written to; the other names
//     keep the old content (rename() cannot replace the content of every name at once).
//   - An output path that is a FIFO, a device, a socket or a directory is refused before anything is
//     written ("PATH: is a FIFO, not a regular file; apron writes only regular files"), and left as it is.
//   - After install_signal_cleanup(), SIGINT, SIGTERM, SIGHUP and SIGQUIT remove the temporary file of
//     every write in progress before the process ends (SIGKILL cannot be caught: a temporary
//     ".NAME.apron-tmp-XXXXXX" may remain, never a partial file under the target's name).
//
// What each format holds (read -> write):
//   PNM   P2/P5 gray, P3/P6 RGB, P7 (PAM) 1-4 channels, P1/P4 bitmaps (black 0, white 255) -> u8/u16, 1 or 3
//         channels (P5/P6, or P2/P3 with pnm_ascii). Samples are kept as stored, not rescaled: maxval <= 255
//         gives u8, larger gives u16 (a maxval-4095 file holds 0..4095). Wide samples are big-endian in files,
//         as Netpbm specifies; ReadOptions::pnm_byte_order = ByteOrder::little reads 16-bit binary samples
//         (P5/P6/P7) little-endian instead, as GenConv writes its 16-bit PGM files. Writing is always
//         big-endian.
//   PFM   Pf (1 channel) / PF (3), either byte order, rows bottom to top -> f32, little-endian.
//   PNG   gray, gray+alpha, RGB, RGBA, palette (expanded to RGB/RGBA), 1-16 bits (below 8 expanded to 8)
//         -> u8/u16, 1-4 channels.
//   JPEG  gray, YCbCr/RGB (CMYK refused); corrupt or truncated data is refused, not patched -> u8, 1 or 3.
//   TIFF  8/16-bit unsigned and 32-bit float, 1-4 samples, gray/RGB, strips or tiles, contiguous or separate
//         planes, every page (read_pages; read_image refuses a file of several pages unless
//         ReadOptions::page picks one); converted exactly as read: palette -> RGB u8, 1/2/4-bit gray -> u8
//         (0..255), min-is-white gray inverted, 8/16-bit signed -> f32, JPEG-compressed YCbCr -> RGB
//         -> u8/u16/f32, 1-4 channels, deflate-compressed strips unless WriteOptions says another codec
//         (zstd, lzw, none) or tiles, one directory per page (write_pages).
//         Reduced-resolution pages (NewSubfileType bit 0: pyramid levels, overviews), transparency-mask
//         pages (bit 2) and SubIFDs are refused by name: filtering a pyramid level as an image of its own
//         would write it back as a page, and dropping it would lose data silently.
//   FITS  the image of the primary HDU, or of the first extension when the primary HDU holds no data (an
//         IMAGE extension, or a tile-compressed image, which cfitsio decompresses): BITPIX 8 -> u8, BITPIX
//         16 with BZERO 32768 -> u16, BITPIX -32 -> f32 (NaN kept), and, converted exactly, BITPIX 16
//         without BZERO (signed) and BITPIX 8 with BZERO -128 -> f32. NAXIS 2 is one image (width NAXIS1,
//         height NAXIS2), NAXIS 3 a cube of NAXIS3 planes, each a page (read_pages; read_image refuses a
//         cube unless ReadOptions::page picks a plane), even when NAXIS3 is 2 to 4: planes are never
//         channels. Rows are kept in the file's order (row 0 is the file's first, which FITS viewers draw
//         at the bottom). Refused by name: BITPIX 32, 64 and -64 (f32 would lose precision), scaled data
//         (BSCALE other than 1, BZERO other than the above), NAXIS 1 and above 3, and no image at all.
//         BLANK (integer images' missing value) is not applied: the samples keep their values and the
//         card is carried. -> u8 (BITPIX 8), u16 (BITPIX 16, BZERO 32768), f32 (BITPIX -32), 1 channel,
//         uncompressed; several pages of one shape and type as one cube (write_pages).
// Multi-byte samples are native-endian in memory.
//
// Metadata (read_metadata, WriteOptions::metadata): the colour profile and the Exif block of JPEG, PNG and
// TIFF files, carried from an input to the output written from it, as libvips does, so that a filtered photo
// shows in a viewer with the colours and the turn of the original. apron filters the pixels as stored
// unless asked to turn them upright first (apply_orientation, `--auto-orient`). From a TIFF also the pixel
// size (XResolution, YResolution, ResolutionUnit), ImageDescription (OME-XML included), Software, DateTime,
// Artist, Copyright, the GeoTIFF tags (33550, 33922, 34264, 34735, 34736, 34737) and GDAL's (42112, 42113):
// all into a TIFF output (which keeps its own size, samples and compression tags); the resolution into
// PNG pHYs and JPEG JFIF density, the description into PNG iTXt and a JPEG comment, where they fit.
// From a FITS file its header cards but the structural ones (ImageMetadata::fits_cards: OBJECT, DATE-OBS,
// the WCS, HISTORY, COMMENT, ...) into a FITS output, after the output's own structural cards.
// fit_metadata says in one line what an output cannot hold.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apron/image.hpp"

namespace apron {

// Byte order of binary samples wider than a byte in PNM files: Netpbm says big-endian; GenConv writes its
// 16-bit PGM files little-endian.
enum class ByteOrder : unsigned char { big, little };

struct ReadOptions {
    std::uint64_t max_pixels = std::uint64_t(1) << 30;  // refuse larger images (1 Gpix by default)
    HostMemory memory = HostMemory::pageable;  // pinned: decode straight into page-locked memory (batches)
    // Bytes reading may take: the file itself and the decoded image (checked from the header, before
    // either is allocated). 0: no limit but max_pixels. The CLI passes its --memory budget here.
    std::uint64_t memory_budget = 0;
    ByteOrder pnm_byte_order = ByteOrder::big;  // 16-bit binary PNM samples (P5/P6/P7)
    // Which image of a multi-page TIFF or plane of a FITS cube: -1 (the default) the file's only one,
    // refusing a file of several pages by name (never page 0 alone, silently); 0.. that page (other
    // formats have page 0 only). read_metadata with -1 gives the first page's.
    int page = -1;
};

// A TIFF tag carried from a TIFF input into a TIFF output as stored, for tags libtiff does not interpret
// (GeoTIFF, GDAL) and text tags: its number, TIFF field type (2 ASCII, 3 SHORT, 12 DOUBLE), count of values
// (ASCII: characters, without the final NUL) and the values' bytes in native byte order.
struct TiffTag {
    std::uint16_t number = 0;
    std::uint16_t type = 0;
    std::uint32_t count = 0;
    std::vector<std::uint8_t> bytes;
    bool operator==(const TiffTag&) const = default;
};

// TIFF's ResolutionUnit: none (only the aspect ratio is known), inch, centimetre.
enum class ResolutionUnit : unsigned char { none = 1, inch = 2, centimetre = 3 };

// What a file says of its pixels besides their values.
struct ImageMetadata {
    // The ICC colour profile (JPEG APP2 "ICC_PROFILE" segments, PNG iCCP, TIFF tag 34675).
    std::vector<std::uint8_t> icc_profile;
    // The Exif block (JPEG APP1 "Exif", PNG eXIf): TIFF-structured, from its byte-order mark on.
    std::vector<std::uint8_t> exif;
    // How a viewer turns the picture: Exif/TIFF Orientation 1..8 (1: as stored), 0: not said. Read from
    // the Exif block, or from a TIFF's own tag.
    int orientation = 0;
    // Pixels per resolution_unit across and down (a microscope's or scanner's pixel size); 0: not said.
    // From TIFF XResolution/YResolution/ResolutionUnit, PNG pHYs, JPEG JFIF density.
    double x_resolution = 0, y_resolution = 0;
    ResolutionUnit resolution_unit = ResolutionUnit::inch;
    // TIFF ImageDescription (OME-XML, tifffile's shape JSON, free text), PNG iTXt/tEXt "Description", a
    // JPEG comment.
    std::string description;
    // TIFF tags carried only into TIFF: Software (305), DateTime (306), Artist (315), Copyright (33432), the
    // GeoTIFF tags and GDAL_METADATA / GDAL_NODATA, in tag order.
    std::vector<TiffTag> tiff_tags;
    // Other tags of a TIFF's page that no output carries (Make, Model, PageName, XMP, the Exif directory...),
    // as "Name (number)": fit_metadata names them, so that none is dropped unsaid.
    std::vector<std::string> tiff_tags_not_carried;
    // A FITS header's cards, each one 80-column card as text without its trailing blanks, in the header's
    // order (long strings keep their CONTINUE cards): every card but the structural ones a FITS writer
    // writes anew (SIMPLE, XTENSION, BITPIX, NAXIS, NAXISn, EXTEND, BZERO, BSCALE, PCOUNT, GCOUNT, END) and
    // CHECKSUM/DATASUM, which the new data would contradict, and the COMMENT cards on the FITS standard that
    // cfitsio writes into every header (apron's FITS outputs have their own). Carried only into FITS outputs.
    std::vector<std::string> fits_cards;

    bool empty() const {
        return icc_profile.empty() && exif.empty() && orientation == 0 && x_resolution == 0 && y_resolution == 0 &&
               description.empty() && tiff_tags.empty() && tiff_tags_not_carried.empty() && fits_cards.empty();
    }
};

struct WriteOptions {
    int jpeg_quality = 95;   // 1..100
    int png_compression = 6; // 0..9 (zlib level)
    bool pnm_ascii = false;  // P2/P3 instead of P5/P6
    // TIFF: the codec, "deflate" (the default), "zstd", "lzw" (each with the horizontal predictor, or the
    // floating-point one for f32) or "none"; and tiles of tiff_tile x tiff_tile pixels (a multiple of 16
    // from 16 to 8192) instead of strips when tiff_tile > 0. `apron filter --compression/--tile`.
    std::string tiff_compression = "deflate";
    int tiff_tile = 0;
    // Written where the format has a place: JPEG (an Exif block over 64 KiB, JPEG's segment limit, is
    // reduced to its orientation), PNG, TIFF (the profile, the orientation and the carried tags), FITS (the
    // FITS cards). PNM and PFM have none. fit_metadata first, to say what is left out.
    ImageMetadata metadata;
};

enum class ImageFormat { pnm, pfm, png, jpeg, tiff, fits };
const char* to_string(ImageFormat f);

// The image of a file (options.page: which page of a multi-page TIFF or plane of a FITS cube; a file of
// several pages without it is refused, naming the file and its page count).
Image read_image(const std::string& path, const ReadOptions& options = {});
// Every page of a file, each an image of its own (a TIFF's pages may differ in size and type; a FITS
// cube's planes share theirs); one page for other formats. The file and all the pages must fit
// options.memory_budget together. options.page is ignored.
std::vector<Image> read_pages(const std::string& path, const ReadOptions& options = {});
// The metadata of every page (read_metadata of each), as read_pages reads them.
std::vector<ImageMetadata> read_pages_metadata(const std::string& path, const ReadOptions& options = {});
// How many pages the file holds (a TIFF's directories, a FITS cube's NAXIS3; 1 for other formats), from its
// directories or header alone.
int count_pages(const std::string& path, const ReadOptions& options = {});
// The shape of every page (probe_image of each, in one pass over the directories).
std::vector<ImageShape> probe_pages(const std::string& path, const ReadOptions& options = {});
// Decodes an image held in memory (the fuzz targets and tests use this); `name` is used in errors.
Image decode_image(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options = {});

// The shape read_image / decode_image would return (width, height, channels, type), from the header alone,
// without decoding pixels: the same refusals of bad headers, of non-regular files, and the same
// max_pixels and memory_budget checks. probe_image(path) reads only the bytes the header needs (a TIFF's
// directory, a JPEG's markers up to the first scan). Refusing before decoding, e.g. an image the output
// format cannot store, takes milliseconds instead of a whole decode.
ImageShape probe_image(const std::string& path, const ReadOptions& options = {});
ImageShape probe_image(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options = {});

// The colour profile, Exif block and orientation of a JPEG, PNG or TIFF file, from the segments before its
// pixels, and a FITS file's header cards; other formats have none. Metadata is a courtesy: a damaged profile or Exif block is left out, not
// an error (the image's own reader judges the file). Bounded by options.memory_budget like a read.
ImageMetadata read_metadata(const std::string& path, const ReadOptions& options = {});
ImageMetadata read_metadata(std::span<const std::uint8_t> bytes, const std::string& name, const ReadOptions& options = {});

// The pixels turned as a viewer shows them (`apron filter --auto-orient`): Exif orientation 2-8 flips
// and/or turns a quarter (5-8 swap width and height), as Pillow's ImageOps.exif_transpose and OpenCV's
// imread do; 0 and 1 give a copy. `memory` as Image's.
Image apply_orientation(ConstImageView image, int orientation, HostMemory memory = HostMemory::pageable);
// Metadata for pixels that apply_orientation turned upright: orientation 1, in the Exif block too.
void mark_upright(ImageMetadata& metadata);
// Both at once, for a decoded image and its file's metadata: nothing to do for orientations 0 and 1.
void turn_upright(Image& image, ImageMetadata& metadata, HostMemory memory = HostMemory::pageable);

void write_image(const std::string& path, ConstImageView image, const WriteOptions& options = {});
// Several images as the pages of one file, each its own TIFF directory with its own metadata (metadata[i],
// or options.metadata for every page when metadata is empty), or the planes of one FITS cube (NAXIS 3):
// its pages must share one size and type, and the cube's one header carries metadata[0]'s FITS cards.
// Only TIFF and FITS hold several images: another format is refused by name unless there is one page.
void write_pages(const std::string& path, std::span<const ConstImageView> pages, const WriteOptions& options = {},
                 std::span<const ImageMetadata> metadata = {});

// Fits metadata read from an input (whose image had shape `from`) to an output in `format` whose image
// has shape `to`, and says what it could not keep: removes what the format has no place for (GeoTIFF tags
// outside TIFF; FITS cards outside FITS; everything in PNM and PFM, and all but the FITS cards in FITS; a
// resolution JPEG's 16-bit density cannot state), an OME-XML description that would state another pixel
// type or size than the output's, and a FITS BLANK card where the output's samples are no longer the
// input's integers (another type, or f32, which FITS marks missing with NaN). Returns one line
// for the caller to print on stderr, e.g. "out.png: GeoTIFF georeferencing (tags 33550, 33922, 34735) not
// carried: PNG has no place for it; write .tif to keep it", or "" when everything is carried. `streamed`:
// the output is written by rows (apron/stream.hpp): the TIFF and PNG sinks write what write_image writes,
// the others (PNM, PFM, raw) nothing.
std::string fit_metadata(ImageMetadata& metadata, ImageFormat format, const std::string& output, const ImageShape& from,
                         const ImageShape& to, bool streamed = false);
std::vector<std::uint8_t> encode_image(ImageFormat format, ConstImageView image, const std::string& name,
                                       const WriteOptions& options = {});

// The format written for a path, from its extension; throws apron::Error for an unknown extension.
ImageFormat format_for_path(const std::string& path);
// The format of the file at `path` from its first bytes, as read_image tells it; throws apron::Error naming
// the file for content no reader of this build knows (or a file that cannot be read).
ImageFormat format_of_file(const std::string& path);
// Whether `format` can store `shape` (type and channels); the message says why not and what to use.
bool can_store(ImageFormat format, const ImageShape& shape, std::string* why = nullptr);
// Formats compiled into this build, e.g. "pnm pfm png jpeg tiff fits".
std::string supported_formats();

// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, then rename.
// Used by every writer and by anything else apron writes (reports, manifests). See "Writing" above for
// modes, links and what is refused.
void write_file_atomically(const std::string& path, std::span<const std::uint8_t> bytes);

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT that remove the temporary files of the writes
// in progress (write_file_atomically registers each one in a fixed, lock-free table), then end the process
// as the signal would have, so that the exit status still reads "killed by SIGTERM". Call it once, early in
// main(); later calls do nothing.
//   - A signal that is ignored when it is called (nohup ignores SIGHUP; a shell ignores SIGINT for a
//     background job) stays ignored.
//   - A handler already installed (an MPI runtime, the application) is kept and chained: on the signal
//     apron removes its temporaries first, then calls that handler and leaves the rest to it; if it
//     returns, the write in progress fails with an error saying it was interrupted.
//   - A handler installed after it replaces apron's unless it chains to the previous one itself.
//   - SIGXFSZ (a file-size limit, ulimit -f) is ignored unless a handler is installed, so that a write past
//     the limit fails with EFBIG and becomes a one-line error ("File too large"), its temporary removed.
void install_signal_cleanup();

} // namespace apron

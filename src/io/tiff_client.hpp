#pragma once
// What the libtiff client handles of apron share: the in-memory files of tiff.cpp and the partial files of
// tiff_row_sink.cpp. Only included where libtiff is (APRON_HAVE_TIFF).
#include <tiffio.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "apron/errors.hpp"
#include "apron/io.hpp"

namespace apron::io {

// Registers the GeoTIFF and GDAL tags with libtiff (a tag extender, once per process), so that handles
// opened after it read and write them typed (tiff.cpp).
void register_carried_tiff_tags();
// The metadata's tags, profile and orientation on the directory being written (tiff.cpp).
void set_tiff_metadata(TIFF* tif, const ImageMetadata& m);

// Where a client seek (the seek procedure of TIFFClientOpen) lands. toff_t is unsigned: SEEK_CUR and
// SEEK_END with a negative offset arrive as its two's complement. Nothing for a seek before the start.
inline std::optional<std::uint64_t> tiff_seek_position(std::uint64_t pos, std::uint64_t size, std::uint64_t offset, int whence) {
    const std::uint64_t base = whence == SEEK_CUR ? pos : whence == SEEK_END ? size : 0;
    if (whence != SEEK_SET && offset >> 63) {
        const std::uint64_t back = ~offset + 1;
        if (back > base) return std::nullopt;
        return base - back;
    }
    return base + offset;
}

// libtiff's first error message on a handle, for apron's one-line error (later ones are consequences).
struct TiffMessage {
    char text[256] = "";
    // libjpeg's warnings in a JPEG-compressed TIFF ("Corrupt JPEG data: premature end of data segment")
    // mean pixels made up in place of the damaged ones: the readers treat them as errors (`damaged`).
    bool damaged = false;
};

inline int keep_first_tiff_error(TIFF*, void* user, const char* module, const char* format, va_list args) {
    TiffMessage& m = *static_cast<TiffMessage*>(user);
    if (m.text[0] == 0) {
        char text[200];
        std::vsnprintf(text, sizeof text, format, args);
        std::snprintf(m.text, sizeof m.text, "%s%s%s", module ? module : "", module ? ": " : "", text);
    }
    return 1;  // handled: libtiff then skips its global handler, which would print to stderr
}
// Other warnings (an unknown tag, a count trimmed) are dropped: libtiff has read what it could, rightly.
inline int keep_damage_warning(TIFF* tif, void* user, const char* module, const char* format, va_list args) {
    if (module && std::strcmp(module, "JPEGLib") == 0) {
        TiffMessage& m = *static_cast<TiffMessage*>(user);
        keep_first_tiff_error(tif, user, module, format, args);
        m.damaged = true;
    }
    return 1;
}

// Options for TIFFClientOpenExt whose handlers keep the first error in `message` and print nothing.
using TiffOpenOptions = std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)>;
inline TiffOpenOptions quiet_tiff_options(const std::string& name, TiffMessage& message) {
    TiffOpenOptions opts(TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
    if (!opts) fail(name, "out of memory starting the TIFF codec");
    TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), keep_first_tiff_error, &message);
    TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), keep_damage_warning, &message);
    return opts;
}

} // namespace apron::io

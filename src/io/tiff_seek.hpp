#pragma once
// Where a libtiff client seek (the seek procedure of TIFFClientOpen) lands, for the in-memory files of
// tiff.cpp and the partial files of tiff_row_sink.cpp. toff_t is unsigned: SEEK_CUR and SEEK_END with a
// negative offset arrive as its two's complement.
#include <cstdint>
#include <cstdio>
#include <optional>

namespace apron::io {

// The new position, or nothing for a seek before the file's start.
inline std::optional<std::uint64_t> tiff_seek_position(std::uint64_t pos, std::uint64_t size, std::uint64_t offset, int whence) {
    const std::uint64_t base = whence == SEEK_CUR ? pos : whence == SEEK_END ? size : 0;
    if (whence != SEEK_SET && offset >> 63) {
        const std::uint64_t back = ~offset + 1;
        if (back > base) return std::nullopt;
        return base - back;
    }
    return base + offset;
}

} // namespace apron::io

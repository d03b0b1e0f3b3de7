#pragma once
// Helpers for the hostile-input tests (tests/test_io_hostile*.cpp): running a read in a child process
// that a hang or a runaway allocation cannot take the test run down with, and building bomb files
// (headers promising huge images, a deflate TIFF of zeros).
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "test_io_support.hpp"

#if APRON_HAVE_TIFF
#include <tiffio.h>
#endif

namespace apron::iotest {

// The virtual memory this process has mapped now (VmSize), in bytes.
inline std::uint64_t mapped_bytes() {
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key) {
        if (key == "VmSize:") {
            std::uint64_t kib = 0;
            status >> kib;
            return kib << 10;
        }
        status.ignore(1 << 12, '\n');
    }
    return 0;
}

// Address-space limits measure what the code under test maps, except under AddressSanitizer, whose
// allocator and shadow memory map on their own terms: there the limit is left out.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool address_space_limits = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool address_space_limits = false;
#else
constexpr bool address_space_limits = true;
#endif
#else
constexpr bool address_space_limits = true;
#endif

// Runs `f` in a child process, killed by SIGALRM after `seconds`, and with its address space limited to
// `extra_bytes` more than it has mapped when it starts (0: no limit; see address_space_limits). Returns
// "ok", "error: <what()>" for an apron::Error, "exception: <what()>" for anything else, or "killed by
// signal N".
inline std::string in_child(const std::function<void()>& f, unsigned seconds = 10, std::uint64_t extra_bytes = 0) {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        ::alarm(seconds);
        if (extra_bytes && address_space_limits) {
            const rlim_t limit = mapped_bytes() + extra_bytes;
            const rlimit r{limit, limit};
            ::setrlimit(RLIMIT_AS, &r);
        }
        std::string outcome;
        try {
            f();
            outcome = "ok";
        } catch (const Error& e) {
            outcome = std::string("error: ") + e.what();
        } catch (const std::exception& e) {
            outcome = std::string("exception: ") + e.what();
        }
        [[maybe_unused]] const ssize_t n = ::write(fds[1], outcome.data(), outcome.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string outcome;
    char chunk[512];
    for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;) outcome.append(chunk, std::size_t(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return outcome;
}

inline std::uint32_t crc32_of(const std::uint8_t* p, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

inline void put_be32(ByteVec& v, std::uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(std::uint8_t(x >> s));
}

inline ByteVec png_chunk(const char* type, const ByteVec& data) {
    ByteVec c;
    put_be32(c, std::uint32_t(data.size()));
    ByteVec body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    c.insert(c.end(), body.begin(), body.end());
    put_be32(c, crc32_of(body.data(), body.size()));
    return c;
}

// A PNG whose header promises width x height (depth bits, colour type `color`) and whose image data is
// cut short: the header alone is valid, so anything refusing it before decoding must do so from the header.
inline ByteVec png_declaring(std::uint32_t width, std::uint32_t height, std::uint8_t depth = 8, std::uint8_t color = 0) {
    ByteVec ihdr;
    put_be32(ihdr, width);
    put_be32(ihdr, height);
    ihdr.insert(ihdr.end(), {depth, color, 0, 0, 0});
    ByteVec png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    png = concat(png, png_chunk("IHDR", ihdr));
    png = concat(png, png_chunk("IDAT", {0x78, 0x9c}));  // a zlib header, then nothing
    return concat(png, png_chunk("IEND", {}));
}

inline ByteVec file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return ByteVec(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const ByteVec& v) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size()));
}

#if APRON_HAVE_TIFF
// A u8 TIFF of zeros written with libtiff itself: deflate strips of `rows_per_strip` rows, or, with
// tile > 0, tiles of tile x tile pixels; `separate` planes for several samples.
inline void write_zero_tiff(const std::string& path, std::uint32_t width, std::uint32_t height, int spp,
                            std::uint32_t rows_per_strip, std::uint32_t tile = 0, bool separate = false) {
    TIFF* tif = TIFFOpen(path.c_str(), "w");
    ASSERT_NE(tif, nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, height);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, std::uint16_t(spp));
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, std::uint16_t(8));
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    if (spp == 2 || spp == 4) {
        const std::uint16_t extra[] = {EXTRASAMPLE_UNASSALPHA};
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, std::uint16_t(1), extra);
    }
    const int planes = separate ? spp : 1;
    const std::size_t chunk_spp = separate ? 1 : std::size_t(spp);
    if (tile) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, tile);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, tile);
        const std::vector<std::uint8_t> zeros(std::size_t(tile) * tile * chunk_spp, 0);
        for (int p = 0; p < planes; ++p)
            for (std::uint32_t y = 0; y < height; y += tile)
                for (std::uint32_t x = 0; x < width; x += tile)
                    TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, x, y, 0, std::uint16_t(p)),
                                         const_cast<std::uint8_t*>(zeros.data()), tmsize_t(zeros.size()));
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rows_per_strip);
        const std::vector<std::uint8_t> zeros(std::size_t(width) * rows_per_strip * chunk_spp, 0);
        for (int p = 0; p < planes; ++p)
            for (std::uint32_t y = 0; y < height; y += rows_per_strip) {
                const std::uint32_t rows = std::min(rows_per_strip, height - y);
                TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, y, std::uint16_t(p)),
                                      const_cast<std::uint8_t*>(zeros.data()),
                                      tmsize_t(std::size_t(width) * rows * chunk_spp));
            }
    }
    TIFFClose(tif);
}
#endif

}  // namespace apron::iotest

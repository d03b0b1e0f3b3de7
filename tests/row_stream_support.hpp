#pragma once
// Helpers for the row source and row sink tests (tests/test_row_source.cpp, tests/test_row_sink.cpp): fixture
// files written independently of the readers under test (libtiff directly, PNM/PAM/PFM/raw byte by byte),
// and band checks that compare every band a RowSource hands out with the same rows of read_image's whole
// image, bit for bit.
#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "io/row_stream.hpp"
#include "test_io_hostile_support.hpp"
#include "test_io_support.hpp"

#if APRON_HAVE_TIFF
#include <tiffio.h>
#endif

namespace apron::rowtest {

using iotest::ByteVec;

// The samples of `img`'s row y as stored in a file of the given byte order.
inline void append_row(ByteVec& out, ConstImageView img, int y, ByteOrder order) {
    const auto* row = reinterpret_cast<const std::uint8_t*>(img.row_bytes(y));
    const std::size_t bytes = img.shape.row_bytes(), width = bytes_per_sample(img.type());
    const bool swap = width > 1 && (order == ByteOrder::little) != (std::endian::native == std::endian::little);
    for (std::size_t i = 0; i < bytes; i += width)
        for (std::size_t b = 0; b < width; ++b) out.push_back(row[i + (swap ? width - 1 - b : b)]);
}

// Raw samples, no header.
inline ByteVec raw_bytes(ConstImageView img, ByteOrder order) {
    ByteVec out;
    for (int y = 0; y < img.height(); ++y) append_row(out, img, y, order);
    return out;
}

// Binary PNM: P5/P6 for 1/3 channels, or P7 (PAM) with `pam`, samples in `order` (Netpbm: big).
inline ByteVec pnm_bytes(ConstImageView img, bool pam, ByteOrder order = ByteOrder::big, const char* maxval = nullptr) {
    const std::string max = maxval ? maxval : img.type() == PixelType::u16 ? "65535" : "255";
    std::string header;
    if (pam) {
        static const char* tuples[] = {"GRAYSCALE", "GRAYSCALE_ALPHA", "RGB", "RGB_ALPHA"};
        header = "P7\nWIDTH " + std::to_string(img.width()) + "\nHEIGHT " + std::to_string(img.height()) + "\nDEPTH " +
                 std::to_string(img.channels()) + "\nMAXVAL " + max + "\nTUPLTYPE " + tuples[img.channels() - 1] + "\nENDHDR\n";
    } else {
        header = std::string(img.channels() == 1 ? "P5" : "P6") + "\n# a comment\n" + std::to_string(img.width()) + " " +
                 std::to_string(img.height()) + "\n" + max + "\n";
    }
    ByteVec out(header.begin(), header.end());
    for (int y = 0; y < img.height(); ++y) append_row(out, img, y, order);
    return out;
}

// PFM: rows bottom to top; the scale's sign gives the byte order.
inline ByteVec pfm_bytes(ConstImageView img, ByteOrder order) {
    const std::string header = std::string(img.channels() == 3 ? "PF" : "Pf") + "\n" + std::to_string(img.width()) + " " +
                               std::to_string(img.height()) + "\n" + (order == ByteOrder::little ? "-1.0" : "1.0") + "\n";
    ByteVec out(header.begin(), header.end());
    for (int y = img.height() - 1; y >= 0; --y) append_row(out, img, y, order);
    return out;
}

#if APRON_HAVE_TIFF
struct TiffSpec {
    std::uint16_t compression = COMPRESSION_NONE;
    bool predictor = false;              // horizontal (integers) or floating point (f32) predictor
    std::uint32_t tile = 0;              // 0: strips of rows_per_strip rows
    std::uint32_t rows_per_strip = 8;
    bool big = false;                    // BigTIFF
    bool separate = false;               // one plane per sample
};

// `img` as a TIFF written by libtiff itself, independently of apron's writer.
inline void write_tiff(const std::string& path, ConstImageView img, const TiffSpec& s) {
    TIFF* tif = TIFFOpen(path.c_str(), s.big ? "w8" : "w");
    ASSERT_NE(tif, nullptr) << path;
    const int spp = img.channels();
    const std::size_t sb = bytes_per_sample(img.type());
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(img.width()));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(img.height()));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, std::uint16_t(spp));
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, std::uint16_t(8 * sb));
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, img.type() == PixelType::f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, s.separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, s.compression);
    if (s.predictor)
        TIFFSetField(tif, TIFFTAG_PREDICTOR, img.type() == PixelType::f32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL);
    if (spp == 2 || spp == 4) {
        const std::uint16_t extra[] = {EXTRASAMPLE_UNASSALPHA};
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, std::uint16_t(1), extra);
    }
    const int planes = s.separate ? spp : 1;
    const std::size_t chunk_spp = s.separate ? 1 : std::size_t(spp);
    // A block of the image (w x h at x0, y0; plane p or every sample) packed into `chunk` with rows `pitch`
    // pixels wide; the rest stays zero, as TIFF pads edge tiles.
    auto pack = [&](std::vector<std::uint8_t>& chunk, std::uint32_t pitch, int x0, int y0, int w, int h, int p) {
        std::fill(chunk.begin(), chunk.end(), 0);
        for (int r = 0; r < h; ++r) {
            const auto* src = reinterpret_cast<const std::uint8_t*>(img.row_bytes(y0 + r));
            for (int x = 0; x < w; ++x)
                for (std::size_t c = 0; c < chunk_spp; ++c)
                    std::memcpy(chunk.data() + ((std::size_t(r) * pitch + std::size_t(x)) * chunk_spp + c) * sb,
                                src + (std::size_t(x0 + x) * std::size_t(spp) + (s.separate ? std::size_t(p) : c)) * sb, sb);
        }
    };
    std::vector<std::uint8_t> chunk;
    if (s.tile) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, s.tile);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, s.tile);
        chunk.resize(std::size_t(s.tile) * s.tile * chunk_spp * sb);
        for (int p = 0; p < planes; ++p)
            for (std::uint32_t y = 0; y < std::uint32_t(img.height()); y += s.tile)
                for (std::uint32_t x = 0; x < std::uint32_t(img.width()); x += s.tile) {
                    pack(chunk, s.tile, int(x), int(y), int(std::min<std::uint32_t>(s.tile, img.width() - x)),
                         int(std::min<std::uint32_t>(s.tile, img.height() - y)), p);
                    ASSERT_GE(TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, x, y, 0, std::uint16_t(p)), chunk.data(),
                                                   tmsize_t(chunk.size())), 0);
                }
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
        chunk.resize(std::size_t(img.width()) * s.rows_per_strip * chunk_spp * sb);
        for (int p = 0; p < planes; ++p)
            for (std::uint32_t y = 0; y < std::uint32_t(img.height()); y += s.rows_per_strip) {
                const std::uint32_t rows = std::min<std::uint32_t>(s.rows_per_strip, img.height() - y);
                pack(chunk, std::uint32_t(img.width()), 0, int(y), img.width(), int(rows), p);
                ASSERT_GE(TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, y, std::uint16_t(p)), chunk.data(),
                                                tmsize_t(std::size_t(img.width()) * rows * chunk_spp * sb)), 0);
            }
    }
    ASSERT_TRUE(TIFFWriteDirectory(tif));
    TIFFClose(tif);
}
#endif

// One band to read: rows [y0, y0 + height).
struct Band {
    int y0 = 0, height = 0;
};

// Bands that cover the image several times over, in random order: the whole image, its first and last
// rows, single rows, runs that overlap (halos) and bands that go backwards.
inline std::vector<Band> band_plan(int height, unsigned seed, int count = 24) {
    std::mt19937 rng(seed);
    std::vector<Band> bands = {{0, height}, {0, 1}, {height - 1, 1}};
    for (int k = 0; k < count; ++k) {
        const int y0 = int(rng() % unsigned(height));
        const int h = 1 + int(rng() % unsigned(std::min(height - y0, 1 + height / 3)));
        bands.push_back({y0, h});
    }
    for (int y = 0, step = std::max(1, height / 5); y < height; y += step) bands.push_back({y, std::min(step + 2, height - y)});
    std::shuffle(bands.begin(), bands.end(), rng);
    return bands;
}

// Reads band `b` from `source` into a buffer whose rows are `extra` bytes wider than the image's (0: rows
// packed without padding, the pitch the readers can read in one go), filled with a pattern first so that
// rows left unwritten are seen; compares every row with `reference`.
inline ::testing::AssertionResult band_matches(io::RowSource& source, ConstImageView reference, Band b, std::size_t extra) {
    const ImageShape& s = source.shape();
    const std::size_t pitch = s.row_bytes() + extra;
    std::vector<std::byte> buffer(pitch * std::size_t(b.height) + 1, std::byte{0xA5});
    const ImageView band{buffer.data(), ImageShape{s.width, b.height, s.channels, s.type}, pitch, Memory::host};
    source.read_rows(b.y0, band);
    for (int r = 0; r < b.height; ++r) {
        if (std::memcmp(band.row_bytes(r), reference.row_bytes(b.y0 + r), s.row_bytes()) != 0)
            return ::testing::AssertionFailure() << source.path() << ": band " << b.y0 << "+" << b.height << ", row "
                                                 << b.y0 + r << " differs from the whole image";
        for (std::size_t k = s.row_bytes(); k < pitch; ++k)
            if (band.row_bytes(r)[k] != std::byte{0xA5})
                return ::testing::AssertionFailure() << source.path() << ": wrote past the row at row " << b.y0 + r;
    }
    return ::testing::AssertionSuccess();
}

// Every band of band_plan read from `source`, alternating packed and padded rows.
inline ::testing::AssertionResult bands_match(io::RowSource& source, ConstImageView reference, unsigned seed) {
    if (!(source.shape() == reference.shape))
        return ::testing::AssertionFailure() << source.path() << ": the row source's shape differs from the whole image's";
    int k = 0;
    for (const Band& b : band_plan(reference.height(), seed)) {
        const auto ok = band_matches(source, reference, b, (k++ % 2) ? 24 : 0);
        if (!ok) return ok;
    }
    return ::testing::AssertionSuccess();
}

}  // namespace apron::rowtest

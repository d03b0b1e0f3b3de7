// RowSource (src/io/row_stream.hpp): every format open_row_source reads by rows, band by band in random,
// overlapping, backward order, compared bit for bit with read_image of the same file (the whole-image
// reader, an independent path through each format). Raw samples have no whole-image reader: they are
// compared with the image the file was written from. Fixtures are written byte by byte or through libtiff
// itself (row_stream_support.hpp), never through the code under test.
#include "row_stream_support.hpp"

namespace apron {
namespace {

using iotest::random_image;
using iotest::ScratchDir;
using iotest::write_bytes;
using rowtest::bands_match;

constexpr PixelType all_types[] = {PixelType::u8, PixelType::u16, PixelType::f32};
constexpr int thread_counts[] = {1, 4};

// Sizes with odd sides, a single pixel, a single row and a single column.
struct Size {
    int width, height;
};
constexpr Size sizes[] = {{37, 29}, {1, 1}, {53, 1}, {1, 40}};

// Opens `path` with `threads` and checks every band of the plan against `reference`.
::testing::AssertionResult source_matches(const std::string& path, ConstImageView reference, int threads, unsigned seed,
                                          io::SourceOptions options = {}) {
    options.threads = threads;
    const auto source = io::open_row_source(path, options);
    return bands_match(*source, reference, seed);
}

::testing::AssertionResult file_matches_read_image(const std::string& path, int threads, unsigned seed,
                                                   io::SourceOptions options = {}) {
    ReadOptions read;
    read.pnm_byte_order = options.pnm_byte_order;
    const Image whole = read_image(path, read);
    return source_matches(path, whole.view(), threads, seed, options);
}

// Writes `bytes` (a file holding `img`) to `path`, then reads it by rows with every thread count against
// read_image, and once against the samples written: both must be the image.
void expect_reads_back(const std::string& path, const rowtest::ByteVec& bytes, const Image& img, unsigned seed) {
    write_bytes(path, bytes);
    for (const int threads : thread_counts) EXPECT_TRUE(file_matches_read_image(path, threads, seed)) << path;
    EXPECT_TRUE(source_matches(path, img.view(), 1, seed)) << path;
}

TEST(RowSource, BinaryPnmMatchesReadImage) {
    ScratchDir dir;
    unsigned seed = 100;
    for (const Size s : sizes)
        for (const PixelType t : {PixelType::u8, PixelType::u16})
            for (const int c : {1, 3}) {
                const Image img = random_image(s.width, s.height, c, t, ++seed);
                const std::string path = dir.file("img" + std::to_string(seed) + (c == 1 ? ".pgm" : ".ppm"));
                expect_reads_back(path, rowtest::pnm_bytes(img.view(), false), img, seed);
            }
}

TEST(RowSource, LittleEndianAndOddMaxvalPnm) {
    ScratchDir dir;
    // 16-bit samples stored little-endian (GenConv's PGM), read with pnm_byte_order = little.
    const Image img = random_image(31, 17, 3, PixelType::u16, 7);
    const std::string little = dir.file("little.ppm");
    write_bytes(little, rowtest::pnm_bytes(img.view(), false, ByteOrder::little));
    io::SourceOptions options;
    options.pnm_byte_order = ByteOrder::little;
    for (const int threads : thread_counts) {
        EXPECT_TRUE(file_matches_read_image(little, threads, 8, options));
        EXPECT_TRUE(source_matches(little, img.view(), threads, 8, options));
    }
    // maxval 1000 is still 16-bit: samples are kept as stored.
    const std::string odd = dir.file("odd.pgm");
    Image small = random_image(19, 23, 1, PixelType::u16, 9);
    for (int y = 0; y < small.height(); ++y)
        for (int x = 0; x < small.width(); ++x) small.row<std::uint16_t>(y)[x] %= 1001;
    write_bytes(odd, rowtest::pnm_bytes(small.view(), false, ByteOrder::big, "1000"));
    EXPECT_TRUE(file_matches_read_image(odd, 1, 10));
}

TEST(RowSource, PamMatchesReadImage) {
    ScratchDir dir;
    unsigned seed = 200;
    for (const Size s : sizes)
        for (const PixelType t : {PixelType::u8, PixelType::u16})
            for (int c = 1; c <= 4; ++c) {
                const Image img = random_image(s.width, s.height, c, t, ++seed);
                const std::string path = dir.file("img" + std::to_string(seed) + ".pam");
                expect_reads_back(path, rowtest::pnm_bytes(img.view(), true), img, seed);
            }
}

TEST(RowSource, PfmBothByteOrdersMatchReadImage) {
    ScratchDir dir;
    unsigned seed = 300;
    for (const Size s : sizes)
        for (const int c : {1, 3})
            for (const ByteOrder order : {ByteOrder::little, ByteOrder::big}) {
                const Image img = random_image(s.width, s.height, c, PixelType::f32, ++seed);
                const std::string path = dir.file("img" + std::to_string(seed) + ".pfm");
                expect_reads_back(path, rowtest::pfm_bytes(img.view(), order), img, seed);
            }
}

TEST(RowSource, RawBothByteOrdersMatchTheImage) {
    ScratchDir dir;
    unsigned seed = 400;
    for (const Size s : sizes)
        for (const PixelType t : all_types)
            for (int c = 1; c <= 4; ++c)
                for (const ByteOrder order : {ByteOrder::little, ByteOrder::big}) {
                    const Image img = random_image(s.width, s.height, c, t, ++seed);
                    const std::string path = dir.file("img" + std::to_string(seed) + ".raw");
                    write_bytes(path, rowtest::raw_bytes(img.view(), order));
                    io::SourceOptions options;
                    options.raw = io::parse_raw_layout(std::to_string(s.width) + "x" + std::to_string(s.height) + "x" +
                                                       std::to_string(c) + ":" + to_string(t) +
                                                       (order == ByteOrder::little ? ":little" : ":big"));
                    for (const int threads : thread_counts)
                        EXPECT_TRUE(source_matches(path, img.view(), threads, seed, options));
                }
}

// A band of several 4 MiB parts, so that four threads really read parts at once.
TEST(RowSource, ThreadsReadPartsOfLargeBands) {
    ScratchDir dir;
    const Image img = random_image(701, 1601, 4, PixelType::u16, 17);  // 5.6 KB rows, 9 MB
    const std::string pam = dir.file("large.pam"), raw = dir.file("large.raw");
    write_bytes(pam, rowtest::pnm_bytes(img.view(), true));
    write_bytes(raw, rowtest::raw_bytes(img.view(), ByteOrder::big));
    io::SourceOptions options;
    options.threads = 4;
    const auto source = io::open_row_source(pam, options);
    for (const std::size_t extra : {std::size_t(0), std::size_t(8)}) {
        EXPECT_TRUE(rowtest::band_matches(*source, img.view(), {0, 1601}, extra));
        EXPECT_TRUE(rowtest::band_matches(*source, img.view(), {333, 1100}, extra));
    }
    options.raw = io::parse_raw_layout("701x1601x4:u16:big");
    const auto raw_source = io::open_row_source(raw, options);
    EXPECT_TRUE(rowtest::band_matches(*raw_source, img.view(), {1, 1599}, 0));
    EXPECT_TRUE(rowtest::band_matches(*raw_source, img.view(), {0, 1601}, 40));
}

// Formats without row access (PNG, ASCII PNM) are decoded whole, within whole_decode_budget.
// PNG (not interlaced) is read by rows (png_rows.cpp, tested in test_encoded_row_sinks.cpp); ASCII PNM is
// decoded whole, within whole_decode_budget.
TEST(RowSource, WholeDecodedFormatsMatchAndKeepTheBudget) {
    ScratchDir dir;
    const Image img = random_image(29, 31, 3, PixelType::u16, 21);
    const std::string png = dir.file("img.png"), ascii = dir.file("ascii.ppm");
    write_image(png, img.view());
    WriteOptions ascii_options;
    ascii_options.pnm_ascii = true;
    write_image(ascii, img.view(), ascii_options);
    io::SourceOptions tight;
    tight.whole_decode_budget = 1024;
    for (const std::string& path : {png, ascii}) {
        EXPECT_TRUE(file_matches_read_image(path, 1, 22));
        EXPECT_TRUE(source_matches(path, img.view(), 4, 23));
    }
    EXPECT_TRUE(source_matches(png, img.view(), 1, 24, tight));  // by rows: the budget is not needed
    EXPECT_TRUE(iotest::fails_naming([&] { io::open_row_source(ascii, tight); }, ascii, "memory budget"));
}

#if APRON_HAVE_TIFF

struct TiffCase {
    const char* name;
    rowtest::TiffSpec spec;
};

// Every compression libtiff writes here, with strips (RowsPerStrip dividing the height or not, one row,
// one strip for the whole image) and tiles (smaller and larger than the image), classic and BigTIFF,
// contiguous and separate planes.
std::vector<TiffCase> tiff_cases() {
    std::vector<TiffCase> cases;
    const std::pair<const char*, std::uint16_t> compressions[] = {
        {"none", COMPRESSION_NONE}, {"deflate", COMPRESSION_ADOBE_DEFLATE}, {"lzw", COMPRESSION_LZW}, {"packbits", COMPRESSION_PACKBITS}};
    for (const auto& [name, compression] : compressions) {
        if (!TIFFIsCODECConfigured(compression)) continue;
        const bool predictor = compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_LZW;
        auto add = [&](std::uint32_t tile, std::uint32_t rows_per_strip, bool big, bool separate) {
            cases.push_back({name, {compression, false, tile, rows_per_strip, big, separate}});
            if (predictor) cases.push_back({name, {compression, true, tile, rows_per_strip, !big, separate}});
        };
        add(0, 7, false, false);      // strips of 7 rows: the last strip is short
        add(0, 1, true, false);       // a strip per row
        add(0, 1u << 20, false, true);  // one strip for the whole image, separate planes
        add(0, 4, true, true);
        add(16, 0, false, false);     // tiles, the last column and row of them overhanging
        add(64, 0, true, false);      // a tile larger than the image
        add(16, 0, true, true);
    }
    return cases;
}

TEST(RowSource, TiffMatchesReadImage) {
    ScratchDir dir;
    unsigned seed = 500;
    int files = 0;
    for (const TiffCase& tc : tiff_cases())
        for (const PixelType t : all_types) {
            // Channels and size vary with the case, so that each combination meets several layouts.
            const int c = 1 + int(seed % 4);
            const Size s = seed % 7 == 0 ? Size{1, 1} : seed % 5 == 0 ? Size{53, 3} : Size{37, 29};
            const Image img = random_image(s.width, s.height, c, t, ++seed);
            const std::string path = dir.file("img" + std::to_string(seed) + (tc.spec.big ? ".btf" : ".tif"));
            rowtest::write_tiff(path, img.view(), tc.spec);
            ASSERT_FALSE(HasFatalFailure());
            ++files;
            for (const int threads : thread_counts) {
                SCOPED_TRACE(std::string(tc.name) + " compression, " + std::to_string(c) + "-channel " + to_string(t) +
                             (tc.spec.tile ? ", tiles of " + std::to_string(tc.spec.tile) : ", strips of " + std::to_string(tc.spec.rows_per_strip)) +
                             (tc.spec.separate ? ", separate planes" : "") + (tc.spec.predictor ? ", predictor" : "") +
                             (tc.spec.big ? ", BigTIFF" : "") + ", threads " + std::to_string(threads));
                EXPECT_TRUE(file_matches_read_image(path, threads, seed));
                EXPECT_TRUE(source_matches(path, img.view(), threads, seed + 1));
            }
        }
    EXPECT_GE(files, 3 * 7 * 2);  // at least deflate and LZW (with and without predictor) besides none
}

// A compressed strip entered in its middle: the first band starts mid-strip, the next ones go forward
// within the strip, backward within it, to an earlier strip, and into a strip's middle again. Codecs
// without random access decode from the strip's start; this must not fail nor give the strip's first rows.
TEST(RowSource, CompressedStripReadFromTheMiddle) {
    ScratchDir dir;
    const rowtest::Band order[] = {{21, 3}, {25, 2}, {17, 1}, {5, 9}, {16, 20}, {49, 1}, {33, 15}, {0, 50}, {47, 3}, {1, 1}};
    unsigned seed = 600;
    for (const std::uint16_t compression : {COMPRESSION_ADOBE_DEFLATE, COMPRESSION_LZW, COMPRESSION_PACKBITS, COMPRESSION_NONE}) {
        if (!TIFFIsCODECConfigured(compression)) continue;
        for (const bool separate : {false, true}) {
            const Image img = random_image(45, 50, 3, PixelType::u16, ++seed);
            const std::string path = dir.file("strips" + std::to_string(seed) + ".tif");
            rowtest::write_tiff(path, img.view(), {compression, compression != COMPRESSION_PACKBITS && compression != COMPRESSION_NONE,
                                                  0, 16, false, separate});
            ASSERT_FALSE(HasFatalFailure());
            const auto source = io::open_row_source(path);
            for (const rowtest::Band b : order)
                EXPECT_TRUE(rowtest::band_matches(*source, img.view(), b, 0))
                    << "compression " << compression << (separate ? ", separate planes" : "");
        }
    }
}

#endif  // APRON_HAVE_TIFF

}  // namespace
}  // namespace apron

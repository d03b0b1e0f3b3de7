// Band stacks (apron/volume_io.hpp): TIFF pages of more than 4 samples read as one-channel planes in either
// planar configuration, strips or tiles, written back as one page of the bands laid out as the input's; each
// band filtered alone gives what the band gives as a gray image of its own. The inputs are written with libtiff
// itself and the outputs read back with it. Hostile headers (no samples, 70000, strips that do not hold the
// bands) are refused in one line: the files are in the fuzz corpus (fuzz/corpus/fuzz_tiff/regress-bands-*).
#include "test_io_support.hpp"

#include "apron/pipeline.hpp"
#include "apron/volume_io.hpp"

#if APRON_HAVE_TIFF

#include <tiffio.h>

namespace apron::iotest {
namespace {

struct Layout {
    bool separate = false;
    std::uint32_t tile = 0;  // 0: strips (3 rows each)
    std::uint16_t compression = COMPRESSION_NONE;
};

// A stack of `bands` random planes of 37 x 23 (odd sizes: partial strips and tiles at the edges).
Image random_stack(int bands, PixelType type, unsigned seed, int width = 37, int height = 23) {
    const Image tall = random_image(width, height * bands, 1, type, seed);
    Image stack(ImageShape{width, height, 1, type, bands});
    for (int y = 0; y < height * bands; ++y) std::memcpy(stack.view().row_bytes(y), tall.view().row_bytes(y), stack.shape().row_bytes());
    return stack;
}

// The stack as the bands of one TIFF page, written by libtiff, with a resolution and a description.
void write_band_tiff(const std::string& path, const Image& stack, const Layout& l) {
    const int bands = stack.depth(), w = stack.width(), h = stack.height();
    const std::size_t s = bytes_per_sample(stack.type());
    TIFF* tif = TIFFOpen(path.c_str(), "w");
    ASSERT_NE(tif, nullptr);
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(w));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(h));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, std::uint16_t(bands));
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, std::uint16_t(8 * s));
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, stack.type() == PixelType::f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    const std::vector<std::uint16_t> extra(std::size_t(bands - 1), EXTRASAMPLE_UNSPECIFIED);
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, std::uint16_t(extra.size()), extra.data());
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, l.separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, l.compression);
    TIFFSetField(tif, TIFFTAG_XRESOLUTION, 10.0f);
    TIFFSetField(tif, TIFFTAG_YRESOLUTION, 20.0f);
    TIFFSetField(tif, TIFFTAG_RESOLUTIONUNIT, std::uint16_t(RESUNIT_CENTIMETER));
    TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, "thirteen bands");
    const int planes = l.separate ? bands : 1, chunk_spp = l.separate ? 1 : bands;
    // Sample (x, y) of chunk plane p, sample k of the chunk's pixel.
    const auto sample = [&](int x, int y, int p, int k) { return stack.view().plane(l.separate ? p : k).row_bytes(y) + std::size_t(x) * s; };
    if (l.tile) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, l.tile);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, l.tile);
        std::vector<std::byte> block(std::size_t(l.tile) * l.tile * chunk_spp * s);
        for (int p = 0; p < planes; ++p)
            for (int ty = 0; ty < h; ty += int(l.tile))
                for (int tx = 0; tx < w; tx += int(l.tile)) {
                    std::fill(block.begin(), block.end(), std::byte{0});
                    for (int y = ty; y < std::min(h, ty + int(l.tile)); ++y)
                        for (int x = tx; x < std::min(w, tx + int(l.tile)); ++x)
                            for (int k = 0; k < chunk_spp; ++k)
                                std::memcpy(&block[((std::size_t(y - ty) * l.tile + std::size_t(x - tx)) * chunk_spp + k) * s], sample(x, y, p, k), s);
                    ASSERT_GE(TIFFWriteTile(tif, block.data(), std::uint32_t(tx), std::uint32_t(ty), 0, std::uint16_t(p)), 0);
                }
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, std::uint32_t(3));
        std::vector<std::byte> row(std::size_t(w) * chunk_spp * s);
        for (int p = 0; p < planes; ++p)
            for (int y = 0; y < h; ++y) {
                for (int x = 0; x < w; ++x)
                    for (int k = 0; k < chunk_spp; ++k) std::memcpy(&row[(std::size_t(x) * chunk_spp + k) * s], sample(x, y, p, k), s);
                ASSERT_GE(TIFFWriteScanline(tif, row.data(), std::uint32_t(y), std::uint16_t(p)), 0);
            }
    }
    TIFFClose(tif);
}

::testing::AssertionResult same_planes(const Image& a, const Image& b) {
    if (!(a.shape() == b.shape())) return ::testing::AssertionFailure() << "shapes differ";
    for (int z = 0; z < a.depth(); ++z)
        if (auto r = same_pixels(a.view().plane(z), b.view().plane(z)); !r) return r << " in band " << z;
    return ::testing::AssertionSuccess();
}

const std::vector<Layout> layouts = {
    {false, 0, COMPRESSION_NONE}, {true, 0, COMPRESSION_NONE}, {false, 16, COMPRESSION_ADOBE_DEFLATE},
    {true, 16, COMPRESSION_LZW},  {false, 0, COMPRESSION_LZW}, {true, 0, COMPRESSION_ADOBE_DEFLATE},
};

TEST(TiffBands, EveryLayoutReadsAsOnePlaneABand) {
    ScratchDir dir;
    for (const int bands : {5, 13})
        for (const PixelType type : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (const Layout& l : layouts) {
                const std::string what = std::to_string(bands) + " " + to_string(type) + (l.separate ? " separate" : " contig") +
                                         (l.tile ? " tiled" : " strips") + " codec " + std::to_string(l.compression);
                const Image stack = random_stack(bands, type, unsigned(bands * 7 + int(type)));
                const std::string path = dir.file("in.tif");
                write_band_tiff(path, stack, l);
                const TiffBands probed = probe_bands(path);
                EXPECT_EQ(probed.bands, bands) << what;
                EXPECT_EQ(probed.separate, l.separate) << what;
                EXPECT_EQ(probed.shape, stack.shape()) << what;
                EXPECT_EQ(probed.extra_samples, std::vector<std::uint16_t>(std::size_t(bands - 1), 0)) << what;
                EXPECT_TRUE(same_planes(read_bands(path), stack)) << what;
                EXPECT_TRUE(same_planes(read_volume(path), stack)) << what;  // a TIFF of one page of bands
            }
}

TEST(TiffBands, WrittenBackLaidOutAsTheInputWithItsTags) {
    ScratchDir dir;
    for (const PixelType type : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const bool separate : {false, true})
            for (const int tile : {0, 16}) {
                const Image stack = random_stack(13, type, 3 + unsigned(type));
                const std::string in = dir.file("in.tif"), out = dir.file("out.tif");
                write_band_tiff(in, stack, {separate, 0, COMPRESSION_NONE});
                TiffBands layout = probe_bands(in);
                WriteOptions wo;
                wo.metadata = read_metadata(in);
                wo.tiff_tile = tile;
                write_bands(out, read_bands(in), layout, wo);
                TIFF* tif = TIFFOpen(out.c_str(), "r");
                ASSERT_NE(tif, nullptr);
                std::uint16_t spp = 0, planar = 0, format = 0, bits = 0, photometric = 0, count = 0, *extra = nullptr;
                TIFFGetField(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
                TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
                TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
                TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
                TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
                ASSERT_TRUE(TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &count, &extra));
                EXPECT_EQ(spp, 13);
                EXPECT_EQ(planar, separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
                EXPECT_EQ(format, type == PixelType::f32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT);
                EXPECT_EQ(bits, 8 * bytes_per_sample(type));
                EXPECT_EQ(photometric, PHOTOMETRIC_MINISBLACK);
                EXPECT_EQ(count, 12);
                EXPECT_EQ(TIFFIsTiled(tif) != 0, tile != 0);
                TIFFClose(tif);
                EXPECT_TRUE(same_planes(read_bands(out), stack));
                const ImageMetadata m = read_metadata(out);
                EXPECT_EQ(m.description, "thirteen bands");
                EXPECT_EQ(m.x_resolution, 10.0);
                EXPECT_EQ(m.y_resolution, 20.0);
                EXPECT_EQ(m.resolution_unit, ResolutionUnit::centimetre);
                // The layout as the writer was told: an RGB page with alpha keeps both.
                layout.rgb = true;
                layout.extra_samples = std::vector<std::uint16_t>(10, EXTRASAMPLE_UNSPECIFIED);
                layout.extra_samples[0] = EXTRASAMPLE_UNASSALPHA;
                write_bands(out, stack, layout, wo);
                const TiffBands again = probe_bands(out);
                EXPECT_TRUE(again.rgb);
                EXPECT_EQ(again.extra_samples, layout.extra_samples);
                EXPECT_TRUE(same_planes(read_bands(out), stack));
            }
}

TEST(TiffBands, EachBandIsFilteredAsAGrayImageOfItsOwn) {
    for (const int bands : {5, 13})
        for (const PixelType type : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (const char* op : {"gaussian:sigma=1.5", "median:se=disk:2", "dilate:se=disk:2"}) {
                const Image stack = random_stack(bands, type, 11 + unsigned(bands));
                const Pipeline pipeline({op});
                RunOptions o;
                o.backend = Backend::cpu;
                const Image all = pipeline.run(stack, o);
                ASSERT_EQ(all.shape(), stack.shape());
                for (int b = 0; b < bands; ++b)
                    EXPECT_TRUE(same_pixels(all.view().plane(b), pipeline.run(stack.view().plane(b), o).view()))
                        << op << " " << to_string(type) << " band " << b << " of " << bands;
            }
}

TEST(TiffBands, ImagesAreNotBandStacksAndBandStacksAreNotImages) {
    ScratchDir dir;
    const std::string gray = dir.file("gray.tif"), five = dir.file("five.tif");
    write_image(gray, random_image(9, 7, 3, PixelType::u8, 1));
    EXPECT_EQ(probe_bands(gray).bands, 0);
    EXPECT_TRUE(fails_naming([&] { read_bands(gray); }, gray, "3 samples per pixel: an image, not a band stack"));
    write_band_tiff(five, random_stack(5, PixelType::u8, 2), {});
    EXPECT_TRUE(fails_naming([&] { read_image(five); }, five, "5 samples per pixel (bands), more than an image's 4 channels"));
    EXPECT_TRUE(fails_naming([&] { probe_image(five); }, five, "band stack"));
    // Not a TIFF: no band stack, and read_bands says what it wants.
    const std::string png = dir.file("a.png");
    write_image(png, random_image(9, 7, 1, PixelType::u8, 1));
    EXPECT_EQ(probe_bands(png).bands, 0);
    EXPECT_TRUE(fails_naming([&] { read_bands(png); }, png, "not a TIFF file"));
    // A page of several is chosen by ReadOptions::page; without it a file of several pages holds no band stack.
    const Image a = random_stack(5, PixelType::u16, 4), b = random_stack(6, PixelType::u16, 5);
    const std::string pages = dir.file("pages.tif");
    {
        TIFF* tif = TIFFOpen(pages.c_str(), "w");
        ASSERT_NE(tif, nullptr);
        for (const Image* s : {&a, &b}) {
            const int n = s->depth();
            TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, std::uint32_t(s->width()));
            TIFFSetField(tif, TIFFTAG_IMAGELENGTH, std::uint32_t(s->height()));
            TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, std::uint16_t(n));
            TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, std::uint16_t(16));
            TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
            TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_SEPARATE);
            TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, std::uint32_t(s->height()));
            for (int p = 0; p < n; ++p)
                for (int y = 0; y < s->height(); ++y)
                    TIFFWriteScanline(tif, const_cast<std::byte*>(s->view().plane(p).row_bytes(y)), std::uint32_t(y), std::uint16_t(p));
            TIFFWriteDirectory(tif);
        }
        TIFFClose(tif);
    }
    EXPECT_EQ(probe_bands(pages).bands, 0);
    ReadOptions second;
    second.page = 1;
    EXPECT_EQ(probe_bands(pages, second).bands, 6);
    EXPECT_TRUE(same_planes(read_bands(pages, second), b));
    EXPECT_TRUE(fails_naming([&] { probe_pages(pages); }, pages, "page 0 of the TIFF file has 5 samples per pixel"));
}

TEST(TiffBands, LimitsCountEveryBand) {
    ScratchDir dir;
    const std::string path = dir.file("in.tif");
    write_band_tiff(path, random_stack(13, PixelType::u16, 9), {});
    ReadOptions few;
    few.max_pixels = 37 * 23 * 12;
    EXPECT_TRUE(fails_naming([&] { read_bands(path, few); }, path, "13 bands of 37x23 are 851 x 13 samples, over the limit"));
    EXPECT_TRUE(fails_naming([&] { probe_bands(path, few); }, path, "over the limit"));
    ReadOptions small;
    small.memory_budget = 20000;
    EXPECT_TRUE(fails_naming([&] { read_bands(path, small); }, path, "over the memory budget"));
}

TEST(TiffBands, WriteRefusesWhatIsNotABandStack) {
    ScratchDir dir;
    const Image rgb = random_image(9, 7, 3, PixelType::u8, 1);
    const Image stack = random_stack(5, PixelType::u8, 1);
    EXPECT_TRUE(fails_naming([&] { write_bands(dir.file("o.tif"), rgb, {}); }, dir.file("o.tif"), "one channel each"));
    EXPECT_TRUE(fails_naming([&] { write_bands(dir.file("o.png"), stack, {}); }, dir.file("o.png"), "one TIFF page"));
    TiffBands six;
    six.bands = 6;
    EXPECT_TRUE(fails_naming([&] { write_bands(dir.file("o.tif"), stack, six); }, dir.file("o.tif"), "6 bands"));
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(TiffBands, HostileHeadersAreRefusedInOneLine) {
    // Hand-made files in the TIFF fuzz corpus: no samples per pixel, 70000 (beyond TIFF's 16 bits), 13 bands
    // in a strip that holds 5, and 13 separate bands with the strips of 5.
    const std::filesystem::path corpus = std::filesystem::path(APRON_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_tiff";
    for (const char* file : {"regress-bands-spp0.tif", "regress-bands-spp70000.tif", "regress-bands-short-strip.tif",
                             "regress-bands-missing-strips.tif"}) {
        const std::string path = (corpus / file).string();
        ASSERT_TRUE(std::filesystem::exists(path)) << path;
        EXPECT_TRUE(fails_naming(
            [&] {
                if (probe_bands(path).bands == 0) read_image(path);  // what apron filter does: bands first, else the image
                read_bands(path);
            },
            path))
            << file;
        const std::string text = read_text(path);
        EXPECT_TRUE(decode_fails(ByteVec(text.begin(), text.end()))) << file;
    }
}

}  // namespace
}  // namespace apron::iotest

#endif

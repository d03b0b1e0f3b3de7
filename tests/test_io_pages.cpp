// Multi-page TIFF (read_pages, ReadOptions::page, count_pages, write_pages), the TIFF tags carried between
// TIFF files, fit_metadata's line for what an output cannot hold, and the Exif orientation read as Pillow
// reads it. The Python suite (test_tiff_pages.py) checks the files with tifffile, an independent reader.
#include <chrono>
#include <filesystem>
#include <cstring>
#include <string>
#include <vector>

#include "io/exif.hpp"
#include "io/row_stream.hpp"
#include "test_io_support.hpp"

namespace apron::iotest {
namespace {

#if APRON_HAVE_TIFF

std::vector<Image> three_pages() {
    std::vector<Image> pages;
    pages.push_back(random_image(13, 7, 1, PixelType::u8, 1));
    pages.push_back(random_image(5, 9, 3, PixelType::u16, 2));
    pages.push_back(random_image(1, 1, 1, PixelType::f32, 3));
    return pages;
}

std::vector<ConstImageView> views_of(const std::vector<Image>& pages) {
    std::vector<ConstImageView> views;
    for (const Image& p : pages) views.push_back(p.view());
    return views;
}

TEST(TiffPages, EveryPageWrittenAndReadBack) {
    ScratchDir dir;
    const std::string path = dir.file("stack.tif");
    const std::vector<Image> pages = three_pages();
    const std::vector<ConstImageView> views = views_of(pages);
    std::vector<ImageMetadata> meta(3);
    meta[1].description = "page one";
    write_pages(path, views, {}, meta);
    EXPECT_EQ(count_pages(path), 3);
    const std::vector<Image> back = read_pages(path);
    ASSERT_EQ(back.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) EXPECT_TRUE(same_pixels(back[k].view(), pages[k].view())) << k;
    ReadOptions one;
    one.page = 1;
    EXPECT_TRUE(same_pixels(read_image(path, one).view(), pages[1].view()));
    EXPECT_EQ(probe_image(path, one), pages[1].shape());
    EXPECT_EQ(read_metadata(path, one).description, "page one");
    EXPECT_EQ(read_pages_metadata(path)[1].description, "page one");
    EXPECT_TRUE(read_pages_metadata(path)[0].description.empty());
}

TEST(TiffPages, OneImageOfSeveralPagesIsRefusedByName) {
    ScratchDir dir;
    const std::string path = dir.file("stack.tif");
    const std::vector<Image> pages = three_pages();
    const std::vector<ConstImageView> views = views_of(pages);
    write_pages(path, views);
    EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, "3 pages"));
    EXPECT_TRUE(fails_naming([&] { probe_image(path); }, path, "3 pages"));
    ReadOptions far;
    far.page = 3;
    EXPECT_TRUE(fails_naming([&] { read_image(path, far); }, path, "no page 3"));
    // Only TIFF holds several images.
    const Image img = random_image(3, 2, 1, PixelType::u8, 6);
    write_image(dir.file("one.png"), img.view());
    EXPECT_TRUE(fails_naming([&] { read_image(dir.file("one.png"), far); }, dir.file("one.png"), "no page 3"));
    EXPECT_TRUE(fails_naming([&] { probe_image(dir.file("one.png"), far); }, dir.file("one.png"), "no page 3"));
    EXPECT_EQ(count_pages(dir.file("one.png")), 1);
    EXPECT_EQ(read_pages(dir.file("one.png")).size(), 1u);
    EXPECT_TRUE(fails_naming([&] { write_pages(dir.file("o.png"), views); }, dir.file("o.png"), ".tif"));
    EXPECT_FALSE(std::filesystem::exists(dir.file("o.png")));
}

// Hundreds of pages, each its own size and description: every page found in order (pages are walked one after
// another, not from the first each time: 2000 pages took 8 million reads that way).
TEST(TiffPages, ManyPagesInOrder) {
    ScratchDir dir;
    const std::string path = dir.file("many.tif");
    std::vector<Image> pages;
    std::vector<ImageMetadata> meta(300);
    for (int k = 0; k < 300; ++k) {
        pages.push_back(random_image(1 + k % 7, 1 + k % 5, 1, PixelType::u8, unsigned(k)));
        meta[std::size_t(k)].description = "page " + std::to_string(k);
    }
    const std::vector<ConstImageView> views = views_of(pages);
    write_pages(path, views, {}, meta);
    const std::vector<ImageShape> shapes = probe_pages(path);
    const std::vector<ImageMetadata> back = read_pages_metadata(path);
    const std::vector<Image> read = read_pages(path);
    ASSERT_EQ(shapes.size(), 300u);
    ASSERT_EQ(back.size(), 300u);
    ASSERT_EQ(read.size(), 300u);
    for (std::size_t k = 0; k < 300; ++k) {
        EXPECT_EQ(shapes[k], pages[k].shape()) << k;
        EXPECT_EQ(back[k].description, meta[k].description) << k;
        EXPECT_TRUE(same_pixels(read[k].view(), pages[k].view())) << k;
    }
    ReadOptions one;
    one.page = 299;
    EXPECT_EQ(read_metadata(path, one).description, "page 299");
}

TEST(TiffPages, TheBudgetHoldsEveryPage) {
    ScratchDir dir;
    const std::string path = dir.file("big.tif");
    std::vector<Image> pages;
    for (unsigned k = 0; k < 4; ++k) pages.push_back(random_image(256, 256, 1, PixelType::u8, k));
    const std::vector<ConstImageView> views = views_of(pages);
    write_pages(path, views);
    ReadOptions tight;
    tight.memory_budget = std::filesystem::file_size(path) + 3 * 256 * 256;  // room for three pages, not four
    EXPECT_TRUE(fails_naming([&] { read_pages(path, tight); }, path, "the pages before it"));
    tight.memory_budget += 2 * 256 * 256;
    EXPECT_EQ(read_pages(path, tight).size(), 4u);
}

TiffTag ascii_tag(std::uint16_t number, const std::string& text) {
    return {number, 2, std::uint32_t(text.size()), std::vector<std::uint8_t>(text.begin(), text.end())};
}
template <class T>
TiffTag numbers_tag(std::uint16_t number, std::uint16_t type, std::vector<T> values) {
    TiffTag t{number, type, std::uint32_t(values.size()), std::vector<std::uint8_t>(values.size() * sizeof(T))};
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

TEST(TiffTags, GeoTiffResolutionAndTextCarriedAsStored) {
    ImageMetadata m;
    m.x_resolution = 2.5;
    m.y_resolution = 4;
    m.resolution_unit = ResolutionUnit::centimetre;
    m.description = "a DEM";
    m.tiff_tags = {ascii_tag(305, "apron test"), ascii_tag(315, "a surveyor"),
                   numbers_tag<double>(33550, 12, {0.5, 0.5, 0}),
                   numbers_tag<double>(33922, 12, {0, 0, 0, 350807.4, 5316081.3, 0}),
                   numbers_tag<std::uint16_t>(34735, 3, {1, 1, 0, 1, 1024, 0, 1, 1}), ascii_tag(34737, "WGS 84|"),
                   ascii_tag(42113, "-9999")};
    WriteOptions wo;
    wo.metadata = m;
    const Image img = random_image(6, 4, 1, PixelType::f32, 9);
    const ByteVec file = encode_image(ImageFormat::tiff, img.view(), "geo.tif", wo);
    const ImageMetadata back = read_metadata(file, "geo.tif");
    EXPECT_EQ(back.x_resolution, 2.5);
    EXPECT_EQ(back.y_resolution, 4);
    EXPECT_EQ(back.resolution_unit, ResolutionUnit::centimetre);
    EXPECT_EQ(back.description, "a DEM");
    EXPECT_EQ(back.tiff_tags, m.tiff_tags);
    // Into PNG the GeoTIFF tags and GDAL's have no place: removed, and said in one line.
    ImageMetadata png = back;
    const std::string line = fit_metadata(png, ImageFormat::png, "o.png", img.shape(), img.shape());
    EXPECT_NE(line.find("o.png: GeoTIFF georeferencing (tags 33550, 33922, 34735 and 34737)"), std::string::npos) << line;
    EXPECT_NE(line.find("GDAL_NODATA"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    ASSERT_EQ(png.tiff_tags.size(), 2u);  // Software and Artist go into PNG text chunks
    EXPECT_EQ(png.description, "a DEM");
    ImageMetadata tiff = back;
    EXPECT_EQ(fit_metadata(tiff, ImageFormat::tiff, "o.tif", img.shape(), img.shape()), "");
    EXPECT_EQ(tiff.tiff_tags, m.tiff_tags);
    ImageMetadata pnm = back;
    EXPECT_NE(fit_metadata(pnm, ImageFormat::pnm, "o.pgm", img.shape(), img.shape()).find("the resolution"), std::string::npos);
    EXPECT_TRUE(pnm.empty());
}

// The row sinks of streamed runs write the same directory entries as the whole-image writer: tiles at fixed
// offsets (apron's own directory) and compressed tiles (libtiff's).
TEST(TiffTags, StreamedTiffSinksWriteTheMetadata) {
    ScratchDir dir;
    ImageMetadata m;
    m.x_resolution = 300;
    m.y_resolution = 150.5;
    m.description = "odd";  // an odd length: the values after it stay on a word
    m.orientation = 6;
    m.icc_profile.assign(1000, 7);
    m.tiff_tags = {numbers_tag<double>(33550, 12, {0.25, 0.5, 0}), ascii_tag(42113, "nan")};
    const Image img = random_image(40, 21, 3, PixelType::u16, 8);
    for (const auto compression : {io::TiffCompression::none, io::TiffCompression::deflate}) {
        io::SinkOptions so;
        so.tiff_tile_side = 16;
        so.tiff_compression = compression;
        so.metadata = m;
        const std::string path = dir.file(std::string("s-") + io::to_string(compression) + ".tif");
        auto sink = io::create_row_sink(path, img.shape(), so);
        sink->write_rows(0, img.view());
        sink->commit();
        sink.reset();
        EXPECT_TRUE(same_pixels(read_image(path).view(), img.view()));
        const ImageMetadata back = read_metadata(path);
        EXPECT_EQ(back.x_resolution, 300);
        EXPECT_EQ(back.y_resolution, 150.5);
        EXPECT_EQ(back.description, "odd");
        EXPECT_EQ(back.orientation, 6);
        EXPECT_EQ(back.icc_profile, m.icc_profile);
        EXPECT_EQ(back.tiff_tags, m.tiff_tags) << io::to_string(compression);
    }
    // The PNG sink writes the chunks encode_image writes: Exif, pHYs, the description and text tags.
    ImageMetadata p;
    p.exif = io::exif_with_orientation(8);
    p.x_resolution = p.y_resolution = 50;  // per centimetre: 5000 per metre, exact in pHYs
    p.resolution_unit = ResolutionUnit::centimetre;
    p.description = "streamed";
    p.tiff_tags = {ascii_tag(305, "apron")};
    io::SinkOptions so;
    so.metadata = p;
    auto sink = io::create_row_sink(dir.file("s.png"), img.shape(), so);
    sink->write_rows(0, img.view());
    sink->commit();
    sink.reset();
    const ImageMetadata back = read_metadata(dir.file("s.png"));
    EXPECT_EQ(back.orientation, 8);
    EXPECT_EQ(back.x_resolution, 50);
    EXPECT_EQ(back.resolution_unit, ResolutionUnit::centimetre);
    EXPECT_EQ(back.description, "streamed");
    EXPECT_EQ(back.tiff_tags, p.tiff_tags);
}

TEST(TiffTags, OmeXmlOfAnotherPixelTypeIsLeftOutAndSaid) {
    ImageMetadata m;
    m.description = "<?xml version=\"1.0\"?><OME xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\">"
                    "<Image><Pixels Type=\"uint16\" SizeX=\"8\" SizeY=\"4\"/></Image></OME>";
    const ImageShape u16{8, 4, 1, PixelType::u16}, f32{8, 4, 1, PixelType::f32};
    ImageMetadata same = m;
    EXPECT_EQ(fit_metadata(same, ImageFormat::tiff, "o.tif", u16, u16), "");
    EXPECT_EQ(same.description, m.description);
    const std::string line = fit_metadata(m, ImageFormat::tiff, "o.tif", u16, f32);
    EXPECT_NE(line.find("OME-XML"), std::string::npos) << line;
    EXPECT_TRUE(m.description.empty());
}

#endif

// An Exif block, little-endian, whose only entry is Orientation of `type` and `count`, the values after the
// directory when they do not fit the entry.
ByteVec exif_with(std::uint16_t type, std::uint32_t count, std::vector<std::uint32_t> values) {
    static const int widths[] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8};
    ByteVec b = {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01};
    auto put = [&](std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) b.push_back(std::uint8_t(v >> (8 * i)));
    };
    put(type, 2);
    put(count, 4);
    const int bytes = widths[type] * int(count);
    ByteVec data;
    for (std::uint32_t v : values)
        for (int i = 0; i < widths[type]; ++i) data.push_back(std::uint8_t(i < 4 ? v >> (8 * i) : 0));
    if (bytes <= 4) {
        data.resize(4, 0);
        b.insert(b.end(), data.begin(), data.end());
        put(0, 4);
    } else {
        put(8 + 2 + 12 + 4, 4);
        put(0, 4);
        b.insert(b.end(), data.begin(), data.end());
    }
    return b;
}

TEST(ExifAsPillow, CountsAndTypesOfTheOrientation) {
    EXPECT_EQ(io::exif_orientation(exif_with(3, 1, {6})), 6);
    EXPECT_EQ(io::exif_orientation(exif_with(3, 2, {6, 3})), 6);  // the first of two, as Pillow
    EXPECT_EQ(io::exif_orientation(exif_with(4, 1, {8})), 8);     // LONG
    EXPECT_EQ(io::exif_orientation(exif_with(1, 1, {5})), 5);     // BYTE
    EXPECT_EQ(io::exif_orientation(exif_with(4, 3, {7, 1, 1})), 7);  // values after the directory
    EXPECT_EQ(io::exif_orientation(exif_with(2, 2, {'6'})), 0);   // ASCII is no number
}

TEST(ExifAsPillow, OutOfRangeOrientationIsSetToOne) {
    for (std::uint32_t bad : {0u, 9u, 255u, 65535u}) {
        ByteVec b = exif_with(3, 1, {bad});
        EXPECT_EQ(io::exif_orientation(b), 0) << bad;
        EXPECT_TRUE(io::drop_bad_exif_orientation(b)) << bad;
        EXPECT_EQ(io::exif_orientation(b), 1) << bad;
    }
    ByteVec long_nine = exif_with(4, 1, {9});
    EXPECT_TRUE(io::drop_bad_exif_orientation(long_nine));
    EXPECT_EQ(io::exif_orientation(long_nine), 1);
    ByteVec good = exif_with(3, 1, {6});
    EXPECT_FALSE(io::drop_bad_exif_orientation(good));
    // read_metadata never hands the bad value on: a PNG written with orientation 9 reads back as 1.
    ImageMetadata m;
    m.exif = exif_with(3, 1, {9});
    WriteOptions wo;
    wo.metadata = m;
    const Image img = random_image(3, 2, 1, PixelType::u8, 4);
    const ByteVec png = encode_image(ImageFormat::png, img.view(), "o.png", wo);
    const ImageMetadata back = read_metadata(png, "o.png");
    EXPECT_EQ(io::exif_orientation(back.exif), 1);
    EXPECT_EQ(back.orientation, 1);
}

TEST(ExifAsPillow, LargePngExifIsReadInOneRead) {
    ScratchDir dir;
    ImageMetadata m;
    m.exif = exif_with(3, 1, {6});
    m.exif.resize(20 << 20, 0xAB);  // 20 MB: a thumbnail or a maker note
    WriteOptions wo;
    wo.metadata = m;
    wo.png_compression = 1;
    const Image img = random_image(4, 4, 3, PixelType::u8, 5);
    write_image(dir.file("big.png"), img.view(), wo);
    const auto t0 = std::chrono::steady_clock::now();
    const ImageMetadata back = read_metadata(dir.file("big.png"));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(back.exif.size(), m.exif.size());
    EXPECT_EQ(back.orientation, 6);
    RecordProperty("seconds", std::to_string(seconds));  // about 0.01 s; a read per byte took 46 s
}

}  // namespace
}  // namespace apron::iotest


// Metadata carried from an input to its output (read_metadata, WriteOptions::metadata): the colour profile
// and the Exif block through JPEG, PNG and TIFF, the orientation between them, and what is left out (a
// JPEG segment's size limit, a profile PNG refuses, damaged blocks) without an error. The Python suite
// checks the CLI's files with Pillow, an independent reader.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/exif.hpp"
#include "test_io_support.hpp"

namespace apron::iotest {
namespace {

// A minimal ICC v2 profile of `bytes` bytes (at least 132): a well-formed header for an RGB or gray display
// profile, no tags, then filler that only sizes it. libpng checks exactly this header.
ByteVec icc_profile(std::size_t bytes, bool gray = false) {
    ByteVec p(bytes, 0);
    auto put32 = [&](std::size_t at, std::uint32_t v) {
        for (int i = 0; i < 4; ++i) p[at + std::size_t(i)] = std::uint8_t(v >> (24 - 8 * i));
    };
    auto put4 = [&](std::size_t at, const char* s) { std::copy(s, s + 4, p.begin() + std::ptrdiff_t(at)); };
    put32(0, std::uint32_t(bytes));
    put32(8, 0x02100000);  // version 2.1
    put4(12, "mntr");
    put4(16, gray ? "GRAY" : "RGB ");
    put4(20, "XYZ ");
    put4(36, "acsp");
    put32(68, 0x0000F6D6);  // the D50 illuminant: X 0.9642, Y 1.0, Z 0.8249 (s15Fixed16)
    put32(72, 0x00010000);
    put32(76, 0x0000D32D);
    put32(128, 0);  // no tags
    for (std::size_t i = 132; i < bytes; ++i) p[i] = std::uint8_t(i * 7);
    return p;
}

// An Exif block (big- or little-endian) with `entries` entries before Orientation, then `tail` filler bytes.
ByteVec exif_block(int orientation, bool little, int entries = 2, std::size_t tail = 0) {
    ByteVec b;
    auto u16 = [&](unsigned v) {
        if (little) b.insert(b.end(), {std::uint8_t(v), std::uint8_t(v >> 8)});
        else b.insert(b.end(), {std::uint8_t(v >> 8), std::uint8_t(v)});
    };
    auto u32 = [&](std::uint32_t v) {
        if (little) { u16(v & 0xFFFF); u16(v >> 16); }
        else { u16(v >> 16); u16(v & 0xFFFF); }
    };
    b.insert(b.end(), little ? std::initializer_list<std::uint8_t>{'I', 'I'} : std::initializer_list<std::uint8_t>{'M', 'M'});
    u16(42);
    u32(8);
    u16(unsigned(entries + 1));
    for (int i = 0; i < entries; ++i) {  // XResolution-like entries the reader must step over
        u16(0x0100 + unsigned(i)); u16(3); u32(1); u16(640); u16(0);
    }
    u16(0x0112); u16(3); u32(1); u16(unsigned(orientation)); u16(0);
    u32(0);
    b.insert(b.end(), tail, 0xAB);
    return b;
}

TEST(Exif, OrientationInBothByteOrders) {
    for (bool little : {false, true})
        for (int o = 1; o <= 8; ++o) EXPECT_EQ(io::exif_orientation(exif_block(o, little)), o) << little;
    for (int o = 1; o <= 8; ++o) EXPECT_EQ(io::exif_orientation(io::exif_with_orientation(o)), o);
    EXPECT_TRUE(io::exif_with_orientation(0).empty());
    EXPECT_TRUE(io::exif_with_orientation(9).empty());
}

TEST(Exif, DamagedBlocksHaveNoOrientation) {
    const ByteVec good = exif_block(6, true);
    // Cut anywhere before the end of the Orientation's value (its 2 bytes are followed by 2 of padding and
    // the 4-byte link to the next directory).
    for (std::size_t n = 0; n < good.size() - 6; ++n)
        EXPECT_EQ(io::exif_orientation(ByteVec(good.begin(), good.begin() + std::ptrdiff_t(n))), 0) << n;
    ByteVec bad = good;
    bad[0] = 'X';
    EXPECT_EQ(io::exif_orientation(bad), 0);
    bad = good;
    bad[4] = 0xFF, bad[5] = 0xFF, bad[6] = 0xFF, bad[7] = 0xFF;  // the directory far past the end
    EXPECT_EQ(io::exif_orientation(bad), 0);
    bad = good;
    bad[8] = 0xFF, bad[9] = 0xFF;  // 65535 entries in a block of a few, none of them Orientation
    bad[10 + 2 * 12] = 0x99;
    EXPECT_EQ(io::exif_orientation(bad), 0);
    EXPECT_EQ(io::exif_orientation(exif_block(0, false)), 0);
    EXPECT_EQ(io::exif_orientation(exif_block(9, false)), 0);
}

ImageMetadata round_trip(const std::string& name, const Image& img, const ImageMetadata& m) {
    WriteOptions w;
    w.metadata = m;
    const ByteVec file = encode_image(format_for_path(name), img, name, w);
    // The same pixels as the file written without metadata (JPEG's are not the image's own).
    EXPECT_TRUE(same_pixels(decode_image(encode_image(format_for_path(name), img, name), name), decode_image(file, name)))
        << "metadata changed the pixels of " << name;
    return read_metadata(file, name);
}

TEST(ImageMetadata, ProfileAndExifThroughEveryFormat) {
    const Image rgb = random_image(19, 7, 3, PixelType::u8, 1), gray16 = random_image(5, 9, 1, PixelType::u16, 2);
    ImageMetadata m;
    m.icc_profile = icc_profile(3000);
    m.exif = exif_block(6, true, 3, 500);
    m.orientation = 6;
    for (const char* name : {"a.jpg", "a.png"}) {
        const ImageMetadata got = round_trip(name, rgb, m);
        EXPECT_EQ(got.icc_profile, m.icc_profile) << name;
        EXPECT_EQ(got.exif, m.exif) << name;
        EXPECT_EQ(got.orientation, 6) << name;
    }
#if APRON_HAVE_TIFF
    const ImageMetadata tiff = round_trip("a.tif", rgb, m);
    EXPECT_EQ(tiff.icc_profile, m.icc_profile);
    EXPECT_TRUE(tiff.exif.empty());  // a TIFF keeps the orientation as its own tag
    EXPECT_EQ(tiff.orientation, 6);
    // From a TIFF's orientation alone, JPEG and PNG get an Exif block holding it.
    ImageMetadata from_tiff;
    from_tiff.orientation = 8;
    for (const char* name : {"b.jpg", "b.png"}) EXPECT_EQ(round_trip(name, rgb, from_tiff).orientation, 8) << name;
    EXPECT_EQ(round_trip("b.tif", gray16, from_tiff).orientation, 8);
#endif
    // Formats without a place for metadata write none, and read none.
    EXPECT_TRUE(round_trip("a.ppm", rgb, m).empty());
    EXPECT_TRUE(round_trip("a.pfm", random_image(4, 3, 1, PixelType::f32, 3), m).empty());
    // And an image written without metadata has none.
    for (const char* name : {"c.jpg", "c.png", "c.tif"}) {
        if (supported_formats().find("tiff") == std::string::npos && std::string(name) == "c.tif") continue;
        EXPECT_TRUE(round_trip(name, rgb, {}).empty()) << name;
    }
}

TEST(ImageMetadata, LargeProfilesSpanJpegSegments) {
    // 150 KB: three APP2 segments in a JPEG, put back together in order.
    const Image img = random_image(8, 8, 3, PixelType::u8, 4);
    ImageMetadata m;
    m.icc_profile = icc_profile(150'000);
    for (const char* name : {"big.jpg", "big.png", "big.tif"}) {
        if (supported_formats().find("tiff") == std::string::npos && std::string(name) == "big.tif") continue;
        EXPECT_EQ(round_trip(name, img, m).icc_profile, m.icc_profile) << name;
    }
}

TEST(ImageMetadata, ProfileLargerThanAJpegHoldsIsLeftOut) {
    const Image img = random_image(4, 4, 3, PixelType::u8, 13);
    ImageMetadata m;
    m.icc_profile = icc_profile(255 * 65519 + 1);
    m.orientation = 4;
    const ImageMetadata jpeg = round_trip("huge.jpg", img, m);
    EXPECT_TRUE(jpeg.icc_profile.empty());
    EXPECT_EQ(jpeg.orientation, 4);
    m.icc_profile.pop_back();  // the largest that fits: 255 full segments
    EXPECT_EQ(round_trip("full.jpg", img, m).icc_profile, m.icc_profile);
}

TEST(ImageMetadata, JpegExifOverItsSegmentKeepsTheOrientation) {
    const Image img = random_image(8, 8, 1, PixelType::u8, 5);
    ImageMetadata m;
    m.exif = exif_block(3, false, 1, 70'000);  // past the 65533 bytes of an APP1 segment
    const ImageMetadata jpeg = round_trip("x.jpg", img, m);
    EXPECT_EQ(jpeg.orientation, 3);
    EXPECT_LT(jpeg.exif.size(), 100u);
    EXPECT_EQ(round_trip("x.png", img, m).exif, m.exif);  // PNG has no such limit
}

TEST(ImageMetadata, WhatAFormatRefusesIsLeftOutNotAnError) {
    const Image rgb = random_image(6, 4, 3, PixelType::u8, 6);
    ImageMetadata m;
    m.icc_profile = icc_profile(400, /*gray=*/true);  // a gray profile on an RGB image: libpng refuses it
    m.orientation = 2;
    const ImageMetadata png = round_trip("g.png", rgb, m);
    EXPECT_TRUE(png.icc_profile.empty());
    EXPECT_EQ(png.orientation, 2);
    ImageMetadata junk;
    junk.icc_profile = ByteVec(50, 0x11);  // not a profile at all
    junk.exif = ByteVec(30, 0x22);         // nor an Exif block
    EXPECT_TRUE(round_trip("j.png", rgb, junk).icc_profile.empty());
    const ImageMetadata jpeg = round_trip("j.jpg", rgb, junk);  // JPEG carries the bytes unread
    EXPECT_EQ(jpeg.icc_profile, junk.icc_profile);
    EXPECT_EQ(jpeg.exif, junk.exif);
    EXPECT_EQ(jpeg.orientation, 0);
}

TEST(ImageMetadata, DamagedOrForeignFilesGiveNone) {
    EXPECT_TRUE(read_metadata(ByteVec{}, "empty").empty());
    EXPECT_TRUE(read_metadata(bytes("P5\n1 1\n255\n\x01"), "p.pgm").empty());
    EXPECT_TRUE(read_metadata(bytes("\xFF\xD8\xFF\xE1\x00"), "cut.jpg").empty());
    EXPECT_TRUE(read_metadata(bytes("\x89PNG\r\n\x1a\n\x00\x00"), "cut.png").empty());
    EXPECT_TRUE(read_metadata(bytes("II*\x00\xFF\xFF\xFF\x00"), "cut.tif").empty());
    // A file cut inside its pixels still gives the segments before them.
    const Image img = random_image(64, 64, 3, PixelType::u8, 7);
    WriteOptions w;
    w.metadata.orientation = 5;
    for (const char* name : {"cut.jpg", "cut.png"}) {
        ByteVec file = encode_image(format_for_path(name), img, name, w);
        file.resize(file.size() * 2 / 3);
        EXPECT_EQ(read_metadata(file, name).orientation, 5) << name;
    }
    ScratchDir dir;
    EXPECT_TRUE(fails_naming([&] { read_metadata(dir.file("none.jpg")); }, dir.file("none.jpg"), "cannot open"));
}

// Orientation o as the Exif table composes it: a transpose (5-8) and then mirrors, written independently of
// apply_orientation's one mapping.
Image turned_by_composition(const Image& in, int o) {
    const bool transpose = o >= 5;
    const bool flip_x = o == 2 || o == 3 || o == 6 || o == 7, flip_y = o == 3 || o == 4 || o == 7 || o == 8;
    const int w = transpose ? in.height() : in.width(), h = transpose ? in.width() : in.height();
    Image out(w, h, in.channels(), in.type());
    const std::size_t pixel = in.shape().row_bytes() / std::size_t(in.width());
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int tx = flip_x ? w - 1 - x : x, ty = flip_y ? h - 1 - y : y;  // in the transposed picture
            const int sx = transpose ? ty : tx, sy = transpose ? tx : ty;
            std::memcpy(reinterpret_cast<std::uint8_t*>(out.view().row_bytes(y)) + std::size_t(x) * pixel,
                        reinterpret_cast<const std::uint8_t*>(in.view().row_bytes(sy)) + std::size_t(sx) * pixel, pixel);
        }
    return out;
}

TEST(Orientation, EveryExifOrientationOnEveryPixelKind) {
    for (const Image& img : {random_image(7, 4, 3, PixelType::u8, 8), random_image(5, 9, 2, PixelType::u16, 9),
                             random_image(1, 6, 1, PixelType::f32, 10), random_image(3, 3, 4, PixelType::u8, 11)})
        for (int o = 0; o <= 8; ++o) {
            const Image got = apply_orientation(img, o);
            EXPECT_TRUE(same_pixels(turned_by_composition(img, o), got)) << "orientation " << o << ", " << img.width()
                                                                         << "x" << img.height();
        }
    // A quarter turn four times, and a mirror twice, give the image back.
    const Image img = random_image(6, 11, 3, PixelType::u16, 12);
    Image turned = apply_orientation(img, 6);
    for (int i = 0; i < 3; ++i) turned = apply_orientation(turned, 6);
    EXPECT_TRUE(same_pixels(img, turned));
    EXPECT_TRUE(same_pixels(img, apply_orientation(apply_orientation(img, 2), 2)));
    EXPECT_THROW(apply_orientation(img, 9), Error);
    // turn_upright: the image and its metadata together; an upright one is left as it is.
    Image turned_up = apply_orientation(img, 1);  // a copy
    ImageMetadata m;
    m.orientation = 8;
    turn_upright(turned_up, m);
    EXPECT_TRUE(same_pixels(apply_orientation(img, 8), turned_up));
    EXPECT_EQ(m.orientation, 1);
    turn_upright(turned_up, m);
    EXPECT_TRUE(same_pixels(apply_orientation(img, 8), turned_up));
}

TEST(Orientation, MarkUprightRewritesTheExifEntry) {
    for (bool little : {false, true}) {
        ImageMetadata m;
        m.exif = exif_block(6, little, 2, 10);
        m.orientation = 6;
        const ByteVec before = m.exif;
        mark_upright(m);
        EXPECT_EQ(m.orientation, 1);
        EXPECT_EQ(io::exif_orientation(m.exif), 1);
        EXPECT_EQ(m.exif.size(), before.size());
        std::size_t changed = 0;
        for (std::size_t i = 0; i < before.size(); ++i) changed += before[i] != m.exif[i];
        EXPECT_EQ(changed, 1u) << "only the orientation's byte changes";
    }
    ImageMetadata none;
    none.exif = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0};  // no entries: already "as stored"
    mark_upright(none);
    EXPECT_EQ(none.orientation, 1);
    EXPECT_EQ(none.exif.size(), 14u);
}

}  // namespace
}  // namespace apron::iotest

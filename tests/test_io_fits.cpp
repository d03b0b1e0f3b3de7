// FITS images and cubes (src/io/fits.cpp): round trips of u8, u16 and f32 (NaN and infinities included),
// files written here byte by byte (independently of cfitsio) read through both readers (cfitsio from memory,
// fixed-offset rows from a file) and as rows for streaming, cubes as pages, the refusals, the header cards
// carried into a FITS output, and fit_metadata's line for a FITS header an output cannot hold. The Python
// suite (tests/python/test_fits.py) checks the files against astropy, an independent reader and writer.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "apron/volume_io.hpp"
#include "io/row_stream.hpp"
#include "test_io_support.hpp"

namespace apron::iotest {
namespace {

#if APRON_HAVE_FITS

// One 80-column header card: "KEYWORD = value" (value right-aligned to column 30, as FITS's fixed format
// writes numbers and logicals), or commentary text after the keyword when `value` is empty.
std::string card(const std::string& keyword, const std::string& value, bool commentary = false) {
    std::string c = keyword;
    c.resize(8, ' ');
    if (commentary) {
        c += value;
    } else {
        c += "= ";
        c += value.size() < 20 && value[0] != '\'' ? std::string(20 - value.size(), ' ') + value : value;
    }
    c.resize(80, ' ');
    return c;
}
std::string text_card(const std::string& keyword, const std::string& text) {
    std::string quoted = "'" + text;
    if (text.size() < 8) quoted.resize(9, ' ');
    return card(keyword, quoted + "'");
}

// A header (cards, END, blanks to a whole block) and a data unit (zeros to a whole block).
ByteVec hdu(const std::vector<std::string>& cards, const ByteVec& data) {
    std::string h;
    for (const std::string& c : cards) h += c;
    h += card("END", "", true);
    h.resize((h.size() + 2879) / 2880 * 2880, ' ');
    ByteVec out(h.begin(), h.end());
    out.insert(out.end(), data.begin(), data.end());
    out.resize((out.size() + 2879) / 2880 * 2880, 0);
    return out;
}

std::vector<std::string> image_cards(int bitpix, const std::vector<long>& axes, bool primary = true) {
    std::vector<std::string> cards;
    cards.push_back(primary ? card("SIMPLE", "T") : text_card("XTENSION", "IMAGE"));
    cards.push_back(card("BITPIX", std::to_string(bitpix)));
    cards.push_back(card("NAXIS", std::to_string(axes.size())));
    for (std::size_t k = 0; k < axes.size(); ++k) cards.push_back(card("NAXIS" + std::to_string(k + 1), std::to_string(axes[k])));
    if (!primary) {
        cards.push_back(card("PCOUNT", "0"));
        cards.push_back(card("GCOUNT", "1"));
    }
    return cards;
}

// Big-endian samples of `bytes` bytes each.
template <class T>
ByteVec big_endian(const std::vector<T>& values) {
    ByteVec out;
    for (const T& v : values) {
        std::uint8_t b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        if constexpr (std::endian::native == std::endian::little) std::reverse(b, b + sizeof(T));
        out.insert(out.end(), b, b + sizeof(T));
    }
    return out;
}

// The image of a decode both ways: cfitsio from memory, and rows read straight from the file.
struct BothWays {
    Image memory, file;
};
BothWays read_both(const ByteVec& bytes, const ScratchDir& dir, const std::string& name = "x.fits", const ReadOptions& options = {}) {
    const std::string path = dir.file(name);
    write_file_atomically(path, bytes);
    return {decode_image(bytes, path, options), read_image(path, options)};
}

const float nan = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

TEST(Fits, FormatsPathsAndStorage) {
    EXPECT_EQ(format_for_path("a.fits"), ImageFormat::fits);
    EXPECT_EQ(format_for_path("a.FIT"), ImageFormat::fits);
    EXPECT_EQ(format_for_path("a.fts"), ImageFormat::fits);
    EXPECT_STREQ(to_string(ImageFormat::fits), "fits");
    EXPECT_NE(supported_formats().find("fits"), std::string::npos);
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) EXPECT_TRUE(can_store(ImageFormat::fits, {4, 4, 1, t}));
    std::string why;
    EXPECT_FALSE(can_store(ImageFormat::fits, {4, 4, 3, PixelType::u8}, &why));
    EXPECT_NE(why.find("one channel"), std::string::npos) << why;
    ScratchDir dir;
    write_image(dir.file("a.fits"), random_image(3, 2, 1, PixelType::u8, 1));
    EXPECT_EQ(format_of_file(dir.file("a.fits")), ImageFormat::fits);
}

TEST(Fits, RoundTripsEveryTypeBothWays) {
    ScratchDir dir;
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
        Image img = random_image(37, 11, 1, t, 7);  // rows padded in memory: 37 samples
        if (t == PixelType::f32) {
            img.row<float>(0)[0] = nan;
            img.row<float>(1)[2] = inf;
            img.row<float>(2)[3] = -inf;
            img.row<float>(3)[4] = -0.0f;
            img.row<float>(4)[5] = std::numeric_limits<float>::denorm_min();
        }
        if (t == PixelType::u16) {
            img.row<std::uint16_t>(0)[0] = 0;
            img.row<std::uint16_t>(0)[1] = 65535;
            img.row<std::uint16_t>(0)[2] = 32768;
        }
        const auto* first = reinterpret_cast<const std::uint8_t*>(img.view().row_bytes(0));
        const std::vector<std::uint8_t> copy(first, first + img.pitch() * std::size_t(img.height()));
        const std::string path = dir.file(std::string("rt_") + to_string(t) + ".fits");
        write_image(path, img);
        // The caller's image is never touched (cfitsio swaps the bytes of the copy it is given).
        EXPECT_EQ(std::memcmp(copy.data(), img.view().row_bytes(0), copy.size()), 0) << to_string(t);
        EXPECT_EQ(probe_image(path), img.shape());
        EXPECT_TRUE(same_pixels(read_image(path).view(), img.view())) << to_string(t);
        const std::string bytes = read_text(path);
        EXPECT_EQ(bytes.size() % 2880, 0u);
        const Image from_memory = decode_image(ByteVec(bytes.begin(), bytes.end()), path);
        EXPECT_TRUE(same_pixels(from_memory.view(), img.view())) << to_string(t);
    }
}

TEST(Fits, WrittenBytesAreFitsOwn) {
    // u16 is BITPIX 16 with BZERO 32768: stored v - 32768, big-endian, after one header block.
    Image img(2, 1, 1, PixelType::u16);
    img.row<std::uint16_t>(0)[0] = 0;
    img.row<std::uint16_t>(0)[1] = 65535;
    const ByteVec file = encode_image(ImageFormat::fits, img.view(), "o.fits");
    ASSERT_EQ(file.size(), 2 * 2880u);
    const std::string header(file.begin(), file.begin() + 2880);
    EXPECT_EQ(header.substr(0, 30), card("SIMPLE", "T").substr(0, 30));
    EXPECT_NE(header.find(card("BITPIX", "16").substr(0, 30)), std::string::npos);
    EXPECT_NE(header.find(card("BZERO", "32768").substr(0, 30)), std::string::npos);
    EXPECT_EQ((ByteVec(file.begin() + 2880, file.begin() + 2884)), (ByteVec{0x80, 0x00, 0x7f, 0xff}));
    EXPECT_TRUE(std::all_of(file.begin() + 2884, file.end(), [](std::uint8_t b) { return b == 0; }));
    // f32: IEEE big-endian, NaN included.
    Image f(1, 1, 1, PixelType::f32);
    f.row<float>(0)[0] = -2.0f;
    const ByteVec ff = encode_image(ImageFormat::fits, f.view(), "o.fits");
    EXPECT_EQ((ByteVec(ff.begin() + 2880, ff.begin() + 2884)), (ByteVec{0xc0, 0, 0, 0}));
}

TEST(Fits, ReferenceFilesOfEverySampleKind) {
    ScratchDir dir;
    {
        const BothWays r = read_both(hdu(image_cards(8, {3, 2}), {1, 2, 3, 4, 5, 255}), dir, "u8.fits");
        for (const Image* img : {&r.memory, &r.file}) {
            ASSERT_EQ(img->shape(), (ImageShape{3, 2, 1, PixelType::u8}));
            EXPECT_EQ(pixels_of<std::uint8_t>(*img), (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 255}));  // row 0 is the file's first
        }
    }
    {
        auto cards = image_cards(16, {2, 2});
        cards.push_back(card("BSCALE", "1"));
        cards.push_back(card("BZERO", "32768"));
        const BothWays r = read_both(hdu(cards, big_endian<std::int16_t>({-32768, -1, 0, 32767})), dir, "u16.fits");
        for (const Image* img : {&r.memory, &r.file}) {
            ASSERT_EQ(img->type(), PixelType::u16);
            EXPECT_EQ(pixels_of<std::uint16_t>(*img), (std::vector<std::uint16_t>{0, 32767, 32768, 65535}));
        }
    }
    {
        const BothWays r = read_both(hdu(image_cards(-32, {4, 1}), big_endian<float>({1.5f, nan, -inf, -3e38f})), dir, "f32.fits");
        for (const Image* img : {&r.memory, &r.file}) {
            ASSERT_EQ(img->type(), PixelType::f32);
            const std::vector<float> v = pixels_of<float>(*img);
            EXPECT_EQ(v[0], 1.5f);
            EXPECT_TRUE(std::isnan(v[1]));
            EXPECT_EQ(v[2], -inf);
            EXPECT_EQ(v[3], -3e38f);
        }
    }
    {
        // Signed 16-bit: every value exact in f32; 37 wide, so the f32 rows are padded and widened in place.
        std::vector<std::int16_t> s;
        for (int i = 0; i < 37 * 3; ++i) s.push_back(std::int16_t(i * 977 - 32768));
        const BothWays r = read_both(hdu(image_cards(16, {37, 3}), big_endian(s)), dir, "i16.fits");
        for (const Image* img : {&r.memory, &r.file}) {
            ASSERT_EQ(img->shape(), (ImageShape{37, 3, 1, PixelType::f32}));
            const std::vector<float> v = pixels_of<float>(*img);
            for (std::size_t i = 0; i < s.size(); ++i) ASSERT_EQ(v[i], float(s[i])) << i;
        }
    }
    {
        // Signed bytes: BITPIX 8 with BZERO -128.
        auto cards = image_cards(8, {3, 1});
        cards.push_back(card("BZERO", "-128"));
        const BothWays r = read_both(hdu(cards, {0, 128, 255}), dir, "i8.fits");
        for (const Image* img : {&r.memory, &r.file}) EXPECT_EQ(pixels_of<float>(*img), (std::vector<float>{-128, 0, 127}));
    }
}

TEST(Fits, EmptyPrimaryHduThenImageExtension) {
    ScratchDir dir;
    auto primary = image_cards(8, {});
    primary.push_back(card("EXTEND", "T"));
    primary.push_back(text_card("TELESCOP", "apron-test"));
    auto ext = image_cards(-32, {2, 2}, false);
    ext.push_back(text_card("EXTNAME", "SCI"));
    ext.push_back(text_card("OBJECT", "M31"));
    const ByteVec file = concat(hdu(primary, {}), hdu(ext, big_endian<float>({1, 2, 3, 4})));
    const BothWays r = read_both(file, dir);
    EXPECT_EQ(pixels_of<float>(r.file), (std::vector<float>{1, 2, 3, 4}));
    EXPECT_TRUE(same_pixels(r.memory.view(), r.file.view()));
    const ImageMetadata m = read_metadata(dir.file("x.fits"));
    ASSERT_EQ(m.fits_cards.size(), 2u);  // the extension's own cards; XTENSION, PCOUNT, GCOUNT are structural
    EXPECT_EQ(m.fits_cards[0], "EXTNAME = 'SCI     '");
    EXPECT_EQ(m.fits_cards[1], "OBJECT  = 'M31     '");
}

TEST(Fits, CubesArePages) {
    ScratchDir dir;
    std::vector<Image> planes;
    for (int p = 0; p < 3; ++p) planes.push_back(random_image(5, 4, 1, PixelType::f32, 10 + p));
    planes[1].row<float>(2)[3] = nan;
    const std::vector<ConstImageView> views = {planes[0].view(), planes[1].view(), planes[2].view()};
    const std::string path = dir.file("cube.fits");
    ImageMetadata meta;
    meta.fits_cards = {"OBJECT  = 'cube    '", "CTYPE3  = 'FREQ    '"};
    write_pages(path, views, {}, std::vector<ImageMetadata>(3, meta));
    EXPECT_EQ(count_pages(path), 3);
    EXPECT_EQ(probe_pages(path), std::vector<ImageShape>(3, planes[0].shape()));
    const std::vector<Image> back = read_pages(path);
    ASSERT_EQ(back.size(), 3u);
    for (int p = 0; p < 3; ++p) EXPECT_TRUE(same_pixels(back[std::size_t(p)].view(), planes[std::size_t(p)].view())) << p;
    const std::vector<ImageMetadata> metas = read_pages_metadata(path);
    ASSERT_EQ(metas.size(), 3u);
    for (const ImageMetadata& m : metas) EXPECT_EQ(m.fits_cards, meta.fits_cards);
    // One image of a cube only when a plane is named, as for a multi-page TIFF.
    EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, "a FITS cube of 3 planes"));
    EXPECT_TRUE(fails_naming([&] { probe_image(path); }, path, "one image was asked for"));
    ReadOptions one;
    one.page = 2;
    EXPECT_TRUE(same_pixels(read_image(path, one).view(), planes[2].view()));
    EXPECT_EQ(probe_image(path, one), planes[2].shape());
    const std::string bytes = read_text(path);
    EXPECT_TRUE(same_pixels(decode_image(ByteVec(bytes.begin(), bytes.end()), path, one).view(), planes[2].view()));
    one.page = 3;
    EXPECT_TRUE(fails_naming([&] { read_image(path, one); }, path, "no page 3 (the FITS file has 3 planes)"));
    // An image has page 0 only.
    const std::string flat = dir.file("flat.fits");
    write_image(flat, planes[0]);
    EXPECT_EQ(count_pages(flat), 1);
    one.page = 1;
    EXPECT_TRUE(fails_naming([&] { read_image(flat, one); }, flat, "no page 1"));
    one.page = 0;
    EXPECT_TRUE(same_pixels(read_image(flat, one).view(), planes[0].view()));
}

// Whether read_volume's volume of `path` is, plane for plane and bit for bit, what read_image reads of each
// plane (ReadOptions::page) from the file and decode_image from its bytes: the one-open read of a cube is the
// plane-by-plane read it replaced.
::testing::AssertionResult volume_is_its_planes(const std::string& path) {
    const Image volume = read_volume(path);
    const std::string bytes = read_text(path);
    for (int z = 0; z < volume.depth(); ++z) {
        ReadOptions one;
        one.page = z;
        if (auto r = same_pixels(volume.view().plane(z), read_image(path, one).view()); !r) return r << " (plane " << z << ", file)";
        if (auto r = same_pixels(volume.view().plane(z), decode_image(ByteVec(bytes.begin(), bytes.end()), path, one).view()); !r)
            return r << " (plane " << z << ", memory)";
    }
    ReadOptions past;
    past.page = volume.depth();
    if (!fails_naming([&] { read_image(path, past); }, path, "no page " + std::to_string(volume.depth())))
        return ::testing::AssertionFailure() << "the volume has " << volume.depth() << " planes and the file more";
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_volume(const Image& a, const Image& b) {
    if (!(a.shape() == b.shape())) return ::testing::AssertionFailure() << "shapes differ";
    for (int z = 0; z < a.depth(); ++z)
        if (auto r = same_pixels(a.view().plane(z), b.view().plane(z)); !r) return r << " in plane " << z;
    return ::testing::AssertionSuccess();
}

TEST(Fits, CubesReadAsOneVolumeAsPlaneByPlane) {
    ScratchDir dir;
    // f32 of 7 planes, 37 x 11 (rows padded in memory), NaN and infinities, written by apron (cfitsio) with
    // a header, read back as one volume and written again: the same samples and cards.
    Image cube(ImageShape{37, 11, 1, PixelType::f32, 7});
    for (int z = 0; z < 7; ++z) {
        const Image plane = random_image(37, 11, 1, PixelType::f32, 40 + unsigned(z));
        for (int y = 0; y < 11; ++y) std::memcpy(cube.view().plane(z).row_bytes(y), plane.view().row_bytes(y), 37 * 4);
    }
    cube.view().plane(0).row<float>(0)[0] = nan;
    cube.view().plane(3).row<float>(5)[36] = nan;
    cube.view().plane(6).row<float>(10)[17] = -inf;
    const std::string f32 = dir.file("f32.fits");
    ImageMetadata header;
    header.fits_cards = {"OBJECT  = 'seven planes'", "CTYPE3  = 'FREQ    '", "BLANK   =               -32768"};
    std::vector<ImageMetadata> each(7, header);
    WriteOptions wo;
    write_volume(f32, cube, wo, each);
    EXPECT_TRUE(volume_is_its_planes(f32));
    const Image back = read_volume(f32);
    EXPECT_TRUE(same_volume(back, cube));
    const std::vector<ImageMetadata> carried = read_pages_metadata(f32);
    ASSERT_EQ(carried.size(), 7u);
    EXPECT_EQ(carried[6].fits_cards, header.fits_cards);
    const std::string again = dir.file("again.fits");
    write_volume(again, back, wo, carried);
    EXPECT_EQ(read_text(again), read_text(f32));  // byte for byte: nothing lost or doubled in the round trip

    // Integers with BZERO (u16: BITPIX 16, BZERO 32768) and signed ones (i16 and i8 as exact f32), 7 planes of
    // 29 x 13, written byte by byte (independently of cfitsio), with BLANK kept as a card (not applied).
    std::vector<std::int16_t> s;
    for (int i = 0; i < 29 * 13 * 7; ++i) s.push_back(std::int16_t(i * 977 - 32768));
    ByteVec i8;
    for (int i = 0; i < 29 * 13 * 7; ++i) i8.push_back(std::uint8_t(i * 37));
    auto u16_cards = image_cards(16, {29, 13, 7});
    u16_cards.push_back(card("BZERO", "32768"));
    u16_cards.push_back(card("BLANK", "-32768"));
    auto i8_cards = image_cards(8, {29, 13, 7});
    i8_cards.push_back(card("BZERO", "-128"));
    const std::vector<std::pair<std::string, ByteVec>> files = {
        {"u16.fits", hdu(u16_cards, big_endian(s))},
        {"i16.fits", hdu(image_cards(16, {29, 13, 7}), big_endian(s))},
        {"i8.fits", hdu(i8_cards, i8)},
    };
    for (const auto& [name, bytes] : files) {
        const std::string path = dir.file(name);
        write_file_atomically(path, bytes);
        EXPECT_TRUE(volume_is_its_planes(path)) << name;
        const Image v = read_volume(path);
        ASSERT_EQ(v.shape(), (ImageShape{29, 13, 1, name == "u16.fits" ? PixelType::u16 : PixelType::f32, 7})) << name;
        // Plane 4, row 12, sample 28: the file's sample 4 * 29 * 13 + 12 * 29 + 28.
        const std::size_t at = 4 * 29 * 13 + 12 * 29 + 28;
        if (name == "u16.fits") EXPECT_EQ(v.view().plane(4).row<std::uint16_t>(12)[28], std::uint16_t(s[at] + 32768));
        if (name == "i16.fits") EXPECT_EQ(v.view().plane(4).row<float>(12)[28], float(s[at]));
        if (name == "i8.fits") EXPECT_EQ(v.view().plane(4).row<float>(12)[28], float(int(i8[at]) - 128));
        const std::string out = dir.file("out_" + name);
        write_volume(out, v, wo, read_pages_metadata(path));
        EXPECT_TRUE(same_volume(read_volume(out), v)) << name;
        if (name == "u16.fits")
            EXPECT_EQ(read_metadata(out).fits_cards, (std::vector<std::string>{"BLANK   =               -32768"}));
    }

    // Tile-compressed cubes (astropy's, in the fuzz corpus): Rice tiles of two planes each, and gzip tiles of
    // floats with NaN, read whole once and decompressed plane after plane.
    const std::filesystem::path corpus = std::filesystem::path(APRON_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_fits";
    for (const char* name : {"cube-rice-i16.fits", "cube-gzip2-f32.fits", "cube.fits"}) {
        const std::string path = (corpus / name).string();
        EXPECT_TRUE(volume_is_its_planes(path)) << name;
    }
    EXPECT_EQ(read_volume((corpus / "cube-rice-i16.fits").string()).shape(), (ImageShape{9, 7, 1, PixelType::f32, 3}));
    const Image gz = read_volume((corpus / "cube-gzip2-f32.fits").string());
    EXPECT_TRUE(std::isnan(gz.view().plane(1).row<float>(2)[3]));
    EXPECT_TRUE(std::isnan(gz.view().plane(2).row<float>(0)[6]));
}

TEST(Fits, CubesReadAsOneVolumeKeepTheRefusals) {
    ScratchDir dir;
    // Cut short: refused from the header, before the volume is allocated, naming the file.
    const ByteVec whole = hdu(image_cards(-32, {5, 4, 3}), ByteVec(5 * 4 * 3 * 4));
    const std::string cut = dir.file("cut.fits");
    write_file_atomically(cut, ByteVec(whole.begin(), whole.begin() + 2880 + 5 * 4 * 4 * 2));
    EXPECT_TRUE(fails_naming([&] { read_volume(cut); }, cut, "truncated FITS file"));
    // The limits of the whole volume and of each plane, and what apron does not read.
    const std::string ok = dir.file("ok.fits");
    write_file_atomically(ok, whole);
    ReadOptions small;
    small.max_pixels = 5 * 4 * 2;
    EXPECT_TRUE(fails_naming([&] { read_volume(ok, small); }, ok, "a volume of 60 voxels is over --max-pixels (40)"));
    small.max_pixels = 10;
    EXPECT_TRUE(fails_naming([&] { read_volume(ok, small); }, ok, "--max-pixels"));
    ReadOptions budget;
    budget.memory_budget = 1000;
    EXPECT_TRUE(fails_naming([&] { read_volume(ok, budget); }, ok, "memory budget"));
    ReadOptions page;
    page.page = 1;
    EXPECT_TRUE(fails_naming([&] { read_volume(ok, page); }, ok, "no page is chosen"));
    auto scaled = image_cards(16, {2, 2, 2});
    scaled.push_back(card("BSCALE", "0.5"));
    const std::string bscale = dir.file("bscale.fits");
    write_file_atomically(bscale, hdu(scaled, ByteVec(16)));
    EXPECT_TRUE(fails_naming([&] { read_volume(bscale); }, bscale, "BSCALE 0.5"));
    EXPECT_TRUE(fails_naming([&] { read_volume(dir.file("none.fits")); }, dir.file("none.fits")));
    // Hostile files of the fuzz corpus: the same one-line refusal as read_image's, and the next file reads.
    const std::filesystem::path corpus = std::filesystem::path(APRON_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_fits";
    for (const char* name : {"regress-rice-overlap.fits", "regress-rice-one-block-zero.fits", "regress-gzip-cut.fits",
                             "regress-nul-in-card.fits", "regress-descriptor-past-end.fits"}) {
        const std::string path = (corpus / name).string();
        std::string want;
        try {
            read_image(path);
        } catch (const Error& e) {
            want = e.what();
        }
        ASSERT_FALSE(want.empty()) << name;
        try {
            read_volume(path);
            ADD_FAILURE() << name << " was read";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), want) << name;
        }
        EXPECT_TRUE(volume_is_its_planes((corpus / "cube-rice-i16.fits").string())) << "after " << name;
    }
}

TEST(Fits, FewPlanesAreStillPlanesNotChannels) {
    ScratchDir dir;
    ByteVec data;
    for (int i = 0; i < 2 * 2 * 3; ++i) data.push_back(std::uint8_t(i));
    const std::string path = dir.file("rgbish.fits");
    write_file_atomically(path, hdu(image_cards(8, {2, 2, 3}), data));
    EXPECT_EQ(count_pages(path), 3);
    const std::vector<Image> pages = read_pages(path);
    ASSERT_EQ(pages.size(), 3u);
    EXPECT_EQ(pages[0].shape(), (ImageShape{2, 2, 1, PixelType::u8}));
    EXPECT_EQ(pixels_of<std::uint8_t>(pages[2]), (std::vector<std::uint8_t>{8, 9, 10, 11}));
}

TEST(Fits, CubeWritesNeedOneShapeAndOneChannel) {
    ScratchDir dir;
    const Image a = random_image(4, 4, 1, PixelType::u8, 1), b = random_image(4, 3, 1, PixelType::u8, 2);
    const Image c = random_image(4, 4, 1, PixelType::u16, 3), rgb = random_image(4, 4, 3, PixelType::u8, 4);
    const std::string path = dir.file("c.fits");
    std::vector<ConstImageView> views = {a.view(), b.view()};
    EXPECT_TRUE(fails_naming([&] { write_pages(path, views); }, path, "one size and type"));
    views = {a.view(), c.view()};
    EXPECT_TRUE(fails_naming([&] { write_pages(path, views); }, path, "page 1 is 4x4 u16"));
    views = {rgb.view(), rgb.view()};
    EXPECT_TRUE(fails_naming([&] { write_pages(path, views); }, path, "one channel"));
    EXPECT_TRUE(fails_naming([&] { write_image(path, rgb); }, path, "one channel"));
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(dir.temp_files().empty());
}

TEST(Fits, WhatApronDoesNotReadIsRefusedByName) {
    const auto refused = [](const std::vector<std::string>& cards, const ByteVec& data, const std::string& fragment) {
        return decode_fails(hdu(cards, data), fragment);
    };
    EXPECT_TRUE(refused(image_cards(32, {2, 2}), ByteVec(16), "BITPIX 32"));
    EXPECT_TRUE(refused(image_cards(64, {2, 2}), ByteVec(32), "64-bit integers"));
    EXPECT_TRUE(refused(image_cards(-64, {2, 2}), ByteVec(32), "f64 to f32 would lose precision"));
    auto scaled = image_cards(16, {2, 2});
    scaled.push_back(card("BSCALE", "0.5"));
    EXPECT_TRUE(refused(scaled, ByteVec(8), "BSCALE 0.5"));
    auto offset = image_cards(16, {2, 2});
    offset.push_back(card("BZERO", "1000"));
    EXPECT_TRUE(refused(offset, ByteVec(8), "BZERO 1000"));
    auto float_offset = image_cards(-32, {2, 2});
    float_offset.push_back(card("BZERO", "1"));
    EXPECT_TRUE(refused(float_offset, ByteVec(16), "scaled samples"));
    EXPECT_TRUE(refused(image_cards(8, {7}), ByteVec(7), "one-dimensional"));
    EXPECT_TRUE(refused(image_cards(8, {2, 2, 2, 2}), ByteVec(16), "NAXIS 4 (2 x 2 x 2 x 2)"));
    EXPECT_TRUE(refused(image_cards(8, {}), {}, "no image"));
    // An empty primary HDU followed by a table, not an image.
    auto primary = image_cards(8, {});
    primary.push_back(card("EXTEND", "T"));
    std::vector<std::string> table = {text_card("XTENSION", "BINTABLE"), card("BITPIX", "8"), card("NAXIS", "2"),
                                      card("NAXIS1", "4"),              card("NAXIS2", "1"), card("PCOUNT", "0"),
                                      card("GCOUNT", "1"),              card("TFIELDS", "1"), text_card("TFORM1", "J")};
    EXPECT_TRUE(decode_fails(concat(hdu(primary, {}), hdu(table, ByteVec(4))), "first extension is a binary table"));
    // Damaged files: a one-line error naming the file, never a crash.
    EXPECT_TRUE(decode_fails(bytes("SIMPLE  = garbage"), "bad FITS file"));
    ByteVec no_end = hdu(image_cards(8, {2, 2}), ByteVec(4));
    no_end[5 * 80] = 'X';  // the END card (after SIMPLE, BITPIX, NAXIS, NAXIS1, NAXIS2) becomes XND
    EXPECT_TRUE(decode_fails(no_end, "bad FITS file"));
    ScratchDir dir;
    write_file_atomically(dir.file("no_end.fits"), no_end);
    EXPECT_TRUE(fails_naming([&] { read_image(dir.file("no_end.fits")); }, dir.file("no_end.fits"), "bad FITS file"));
}

TEST(Fits, TruncatedDataIsRefusedBeforeAllocating) {
    ScratchDir dir;
    const ByteVec whole = hdu(image_cards(16, {100, 100}), ByteVec(20000));
    const ByteVec cut(whole.begin(), whole.begin() + 2880 + 1000);
    const std::string path = dir.file("cut.fits");
    write_file_atomically(path, cut);
    EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, "truncated FITS file"));
    EXPECT_TRUE(decode_fails(cut, "truncated FITS file"));
    EXPECT_EQ(probe_image(path), (ImageShape{100, 100, 1, PixelType::f32}));  // the header alone is sound
    // A header promising far more than the limits is refused from the header.
    ReadOptions small;
    small.max_pixels = 100;
    EXPECT_TRUE(decode_fails(whole, "--max-pixels", small));
    ReadOptions budget;
    budget.memory_budget = 30000;
    EXPECT_TRUE(fails_naming([&] { read_pages(path, budget); }, path, "memory budget"));
}

TEST(Fits, HeaderCardsAreCarriedIntoFits) {
    ScratchDir dir;
    // The cards carried, as the header holds them (without trailing blanks), among structural ones.
    const std::vector<std::string> carried_cards = {
        text_card("OBJECT", "NGC 1300"), text_card("DATE-OBS", "2024-01-02T03:04:05"), card("CRPIX1", "512.5"),
        text_card("CTYPE1", "RA---TAN"), card("BLANK", "-32768"),  card("HISTORY", " reduced by hand", true),
        card("COMMENT", " a comment", true), card("LONGSTR", "'" + std::string(67, 'x') + "&'"), card("CONTINUE", "  'yy'", true)};
    auto cards = image_cards(16, {3, 2});
    cards.push_back(card("BZERO", "32768"));
    cards.push_back(card("BSCALE", "1"));
    cards.push_back(text_card("CHECKSUM", "0000000000000000"));
    cards.push_back(text_card("DATASUM", "0"));
    cards.insert(cards.end(), carried_cards.begin(), carried_cards.end());
    const std::string in = dir.file("in.fits");
    write_file_atomically(in, hdu(cards, ByteVec(12)));
    const ImageMetadata m = read_metadata(in);
    std::vector<std::string> want;
    for (std::string c : carried_cards) {
        while (c.back() == ' ') c.pop_back();
        want.push_back(c);
    }
    EXPECT_EQ(want[2], "CRPIX1  =                512.5");
    EXPECT_EQ(m.fits_cards, want);
    EXPECT_FALSE(m.empty());
    // Into a FITS output of the same type, every card, after the output's own; twice round, no card doubles.
    std::string out = dir.file("out.fits");
    for (int round = 0; round < 2; ++round) {
        ImageMetadata fitted = read_metadata(round == 0 ? in : out);
        const Image img = read_image(round == 0 ? in : out);
        EXPECT_EQ(fit_metadata(fitted, ImageFormat::fits, out, img.shape(), img.shape()), "");
        WriteOptions wo;
        wo.metadata = fitted;
        const std::string next = dir.file("out" + std::to_string(round) + ".fits");
        write_image(next, img, wo);
        out = next;
        EXPECT_EQ(read_metadata(out).fits_cards, want) << round;
        // cfitsio's COMMENT on the FITS standard is in the file once, not once more with every round trip.
        const std::string text = read_text(out);
        const std::size_t at = text.find("FITS (Flexible Image Transport System)");
        EXPECT_NE(at, std::string::npos);
        EXPECT_EQ(text.find("FITS (Flexible Image Transport System)", at + 1), std::string::npos) << round;
    }
}

TEST(Fits, FitMetadataSaysWhatIsLeftOut) {
    const ImageShape u16{3, 2, 1, PixelType::u16}, f32{3, 2, 1, PixelType::f32};
    ImageMetadata header;
    header.fits_cards = {"OBJECT  = 'M31     '", "BLANK   =               -32768", "HISTORY  one", "HISTORY  two"};
    {
        ImageMetadata m = header;
        const std::string line = fit_metadata(m, ImageFormat::png, "o.png", u16, u16);
        EXPECT_EQ(line, "o.png: the FITS header (4 cards: OBJECT, BLANK, HISTORY) not carried: PNG has no place for it; write .fits to keep it");
        EXPECT_TRUE(m.fits_cards.empty());
    }
    {
        ImageMetadata m = header;
        EXPECT_EQ(fit_metadata(m, ImageFormat::tiff, "o.tif", u16, u16),
                  "o.tif: the FITS header (4 cards: OBJECT, BLANK, HISTORY) not carried: TIFF has no place for it; write .fits to keep it");
    }
    {
        // A streamed run cannot write FITS: no advice to.
        ImageMetadata m = header;
        const std::string line = fit_metadata(m, ImageFormat::tiff, "o.tif", u16, u16, true);
        EXPECT_NE(line.find("the FITS header"), std::string::npos);
        EXPECT_EQ(line.find(".fits"), std::string::npos) << line;
    }
    {
        ImageMetadata m = header;
        EXPECT_EQ(fit_metadata(m, ImageFormat::fits, "o.fits", u16, u16), "");
        EXPECT_EQ(m.fits_cards, header.fits_cards);
    }
    {
        // Another type: BLANK no longer marks the output's missing samples.
        ImageMetadata m = header;
        const std::string line = fit_metadata(m, ImageFormat::fits, "o.fits", u16, f32);
        EXPECT_EQ(line, "o.fits: the BLANK card (BLANK = -32768 marks missing integer samples of the input, and the output's samples are f32) not carried");
        EXPECT_EQ(m.fits_cards, (std::vector<std::string>{"OBJECT  = 'M31     '", "HISTORY  one", "HISTORY  two"}));
    }
    {
        // What FITS has no place for.
        ImageMetadata m;
        m.x_resolution = m.y_resolution = 300;
        m.description = "a scan";
        const std::string line = fit_metadata(m, ImageFormat::fits, "o.fits", u16, u16);
        EXPECT_EQ(line, "o.fits: the resolution (300 x 300 pixels per inch) and the description not carried: FITS has no place for them; "
                        "write .tif to keep them");
    }
}

TEST(Fits, RowsStreamAsTheWholeImageReadsThem) {
    ScratchDir dir;
    std::vector<std::int16_t> s;
    for (int i = 0; i < 29 * 17; ++i) s.push_back(std::int16_t(i * 131 - 30000));
    auto u16_cards = image_cards(16, {29, 17});
    u16_cards.push_back(card("BZERO", "32768"));
    std::vector<float> f;
    for (int i = 0; i < 29 * 17; ++i) f.push_back(i % 7 == 0 ? nan : float(i) * 0.25f);
    const std::vector<std::pair<std::string, ByteVec>> files = {
        {"i16.fits", hdu(image_cards(16, {29, 17}), big_endian(s))},
        {"u16.fits", hdu(u16_cards, big_endian(s))},
        {"f32.fits", hdu(image_cards(-32, {29, 17}), big_endian(f))},
        {"u8.fits", hdu(image_cards(8, {29, 17}), ByteVec(29 * 17, 200))},
    };
    for (const auto& [name, bytes] : files) {
        const std::string path = dir.file(name);
        write_file_atomically(path, bytes);
        const Image whole = read_image(path);
        auto source = io::open_row_source(path);
        ASSERT_EQ(source->shape(), whole.shape()) << name;
        for (const auto& [y0, rows] : std::vector<std::pair<int, int>>{{0, 17}, {3, 5}, {16, 1}, {0, 1}}) {
            Image band(whole.width(), rows, 1, whole.type());
            source->read_rows(y0, band.view());
            for (int r = 0; r < rows; ++r)
                ASSERT_EQ(std::memcmp(band.view().row_bytes(r), whole.view().row_bytes(y0 + r), whole.shape().row_bytes()), 0)
                    << name << " row " << y0 + r;
        }
    }
    // A cube is one image only by plane.
    std::vector<float> cube(2 * 2 * 2, 1.0f);
    const std::string path = dir.file("cube.fits");
    write_file_atomically(path, hdu(image_cards(-32, {2, 2, 2}), big_endian(cube)));
    EXPECT_TRUE(fails_naming([&] { io::open_row_source(path); }, path, "a FITS cube of 2 planes"));
}

TEST(Fits, WhatCfitsioCouldNotSurviveIsRefusedFirst) {
    // Files fuzz_fits found to crash cfitsio 4.2 (Debian 12's) or make it allocate without bound, kept in the
    // seed corpus: each refused in one line before cfitsio meets what it cannot handle.
    const std::filesystem::path corpus = std::filesystem::path(APRON_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_fits";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"regress-rice-overlap.fits", "Rice-compressed tile 5 (13 bytes) ends before its 8 pixels"},
        {"regress-gzip-cut.fits", "gzip-compressed tile 1"},
        {"regress-ztile-zero.fits", "ZTILE1 below 1"},
        {"regress-rice-block-zero.fits", "Rice blocks of 0 pixels"},
        {"regress-rice-one-block-zero.fits", "Rice blocks of 0 pixels"},  // ZCMPTYPE = 'RICE_ONE' (fuzz_fits, CI)
        {"regress-rice-block-zero-lowercase.fits", "Rice blocks of 0 pixels"},  // 'rICE_1
        {"regress-nul-in-card.fits", "control byte (0) in card 5"},
        {"regress-tfields.fits", "TFIELDS = 1000000000000000"},
        {"regress-unreadable-number.fits", "ZVAL2 = (      2, not a number"},
        {"regress-misaligned-cards.fits", ", not a number"},
        {"regress-rows-not-tiles.fits", "parameters are incomplete"},
        {"regress-long-column-name.fits", "an unquoted value of 70 characters"},
        {"regress-descriptor-past-end.fits", "tile table and heap"},
        {"regress-duplicate-ztile.fits", "ZTILE2 below 1"},
    };
    for (const auto& [file, fragment] : cases) {
        const std::string path = (corpus / file).string();
        const std::string text = read_text(path);
        EXPECT_TRUE(decode_fails(ByteVec(text.begin(), text.end()), fragment)) << file;
        EXPECT_TRUE(fails_naming([&] { read_image(path); }, path, fragment)) << file;
        // The next file is read as usual (cfitsio's state is not damaged by the one before).
        EXPECT_EQ(read_image((corpus / "compressed-rice.fits").string()).shape(), (ImageShape{8, 6, 1, PixelType::f32}));
    }
    // A header's mandatory cards out of the standard's order.
    auto cards = image_cards(8, {2, 2});
    std::swap(cards[1], cards[2]);
    EXPECT_TRUE(decode_fails(hdu(cards, ByteVec(4)), "lacks BITPIX as card 2"));
}

TEST(Fits, EveryFitsFileOfTheCorpusDecodesOrIsRefused) {
    // The seeds fuzz_fits starts from (fuzz/corpus/fuzz_fits): each decodes, probes to the same shape, and
    // reads its metadata.
    const std::filesystem::path corpus = std::filesystem::path(APRON_SOURCE_DIR) / "fuzz" / "corpus" / "fuzz_fits";
    if (!std::filesystem::exists(corpus)) GTEST_SKIP() << "no " << corpus;
    int decoded = 0;
    for (const auto& e : std::filesystem::directory_iterator(corpus)) {
        const std::string text = read_text(e.path().string());
        const ByteVec file(text.begin(), text.end());
        try {
            const Image img = decode_image(file, e.path().string());
            EXPECT_EQ(probe_image(file, e.path().string()), img.shape()) << e.path();
            ++decoded;
        } catch (const Error& err) {
            EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos);
        }
        (void)read_metadata(file, e.path().string());
    }
    EXPECT_GT(decoded, 0);
}

#else

TEST(Fits, NotBuiltIsSaid) {
    EXPECT_TRUE(fails_naming([] { format_for_path("a.fits"); }, "a.fits", "libcfitsio-dev"));
    EXPECT_TRUE(decode_fails(bytes("SIMPLE  =                    T"), "FITS support is not built in"));
}

#endif  // APRON_HAVE_FITS

}  // namespace
}  // namespace apron::iotest

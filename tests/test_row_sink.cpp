// RowSink (src/io/row_stream.hpp): every random-access sink create_row_sink makes (.tif tiled BigTIFF,
// .pgm/.ppm, .pfm, .raw) written in shuffled bands from several threads, bands cutting tile rows, then
// committed and read back with read_image (the whole-image reader) and compared bit for bit. Also: no
// file without commit, resuming a kept partial file, and refusals.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "row_stream_support.hpp"

namespace apron {
namespace {

using iotest::random_image;
using iotest::same_pixels;
using iotest::ScratchDir;
using rowtest::Band;

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// The image a committed sink wrote, read back: read_image, or for .raw the native samples as they are.
Image read_back(const std::string& path, const ImageShape& shape) {
    if (path.ends_with(".raw")) {
        const iotest::ByteVec bytes = iotest::file_bytes(path);
        Image img(shape);
        if (bytes.size() != shape.row_bytes() * std::size_t(shape.height)) return Image{};
        for (int y = 0; y < shape.height; ++y)
            std::memcpy(img.view().row_bytes(y), bytes.data() + std::size_t(y) * shape.row_bytes(), shape.row_bytes());
        return img;
    }
    return read_image(path);
}

// Random cuts of [0, height) into bands that do not respect `granularity` (so tile rows are cut and
// completed by later bands), shuffled.
std::vector<Band> shuffled_bands(int height, int granularity, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<Band> bands;
    for (int y = 0; y < height;) {
        const int h = std::min(height - y, 1 + int(rng() % unsigned(granularity + granularity / 2 + 2)));
        bands.push_back({y, h});
        y += h;
    }
    std::shuffle(bands.begin(), bands.end(), rng);
    return bands;
}

// Writes `img` through `sink` in `bands`, dealt round-robin to `writers` threads at once.
void write_bands(io::RowSink& sink, ConstImageView img, const std::vector<Band>& bands, int writers) {
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> failures(static_cast<std::size_t>(writers));
    for (int t = 0; t < writers; ++t)
        threads.emplace_back([&, t] {
            try {
                for (std::size_t k = std::size_t(t); k < bands.size(); k += std::size_t(writers))
                    sink.write_rows(bands[k].y0, img.roi(0, bands[k].y0, img.width(), bands[k].height));
            } catch (...) {
                failures[std::size_t(t)] = std::current_exception();
            }
        });
    for (auto& t : threads) t.join();
    for (const auto& f : failures)
        if (f) std::rethrow_exception(f);
}

// apron writes tiled BigTIFF itself, but reads it back through libtiff: without it (a build with no
// libtiff-dev) the TIFF cases cannot be checked and are left out.
#ifdef APRON_HAVE_TIFF
constexpr bool reads_tiff = true;
#else
constexpr bool reads_tiff = false;
#endif
bool checkable(const std::string& path) {
    const std::size_t dot = path.find_last_of('.');
    return reads_tiff || (dot != std::string::npos && path.compare(dot, 4, ".tif") != 0);
}

struct SinkCase {
    std::string extension;
    ImageShape shape;
};

std::vector<SinkCase> sink_cases() {
    std::vector<SinkCase> cases;
    // Tiles of 16 over 70x45: the last tile column and row overhang the image.
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (int c = 1; c <= 4; ++c) {
            cases.push_back({".tif", {70, 45, c, t}});
            cases.push_back({".raw", {33, 21, c, t}});
        }
    cases.push_back({".tif", {1, 1, 3, PixelType::u16}});
    cases.push_back({".tiff", {16, 32, 2, PixelType::u8}});  // whole tiles only
    for (const PixelType t : {PixelType::u8, PixelType::u16}) {
        cases.push_back({".pgm", {41, 27, 1, t}});
        cases.push_back({".ppm", {41, 27, 3, t}});
        cases.push_back({".pnm", {1, 1, 1, t}});
    }
    cases.push_back({".pfm", {29, 31, 1, PixelType::f32}});
    cases.push_back({".pfm", {29, 31, 3, PixelType::f32}});
    return cases;
}

TEST(RowSink, ShuffledBandsFromThreadsReadBackBitExact) {
    ScratchDir dir;
    unsigned seed = 10;
    for (const SinkCase& sc : sink_cases())
        for (const int writers : {1, 3}) {
            const ImageShape& s = sc.shape;
            const Image img = random_image(s.width, s.height, s.channels, s.type, ++seed);
            const std::string path = dir.file("out" + std::to_string(seed) + sc.extension);
            if (!checkable(path)) continue;
            SCOPED_TRACE(path + ": " + std::to_string(s.width) + "x" + std::to_string(s.height) + "x" +
                         std::to_string(s.channels) + " " + to_string(s.type) + ", " + std::to_string(writers) + " writers");
            io::SinkOptions options;
            options.tiff_tile_side = 16;
            options.threads = 2;
            const auto sink = io::create_row_sink(path, s, options);
            ASSERT_TRUE(sink->random_access());
            EXPECT_EQ(sink->row_granularity(), io::sink_row_granularity(path, options));
            write_bands(*sink, img.view(), shuffled_bands(s.height, sink->row_granularity(), seed), writers);
            sink->sync();
            EXPECT_FALSE(exists(path));  // nothing under the final name before commit
            sink->commit();
            EXPECT_FALSE(exists(sink->partial_path()));
            EXPECT_TRUE(same_pixels(read_back(path, s).view(), img.view()));
        }
}

// A sink's rows come from the band, not from the image the band is cut from: rows with padding, a band of
// its own buffer, several parts per band (4 MiB each) on four threads.
TEST(RowSink, LargeBandsInPartsReadBackBitExact) {
    ScratchDir dir;
    const Image img = random_image(1000, 1200, 3, PixelType::u16, 5);  // 7.2 MB
    for (const char* name : {"large.ppm", "large.tif"}) {
        const std::string path = dir.file(name);
        if (!checkable(path)) continue;
        io::SinkOptions options;
        options.threads = 4;
        options.tiff_tile_side = 64;
        const auto sink = io::create_row_sink(path, img.shape(), options);
        const Image upper = copy_of(img.view().roi(0, 0, 1000, 700));
        sink->write_rows(700, img.view().roi(0, 700, 1000, 500));
        sink->write_rows(0, upper.view());
        sink->commit();
        EXPECT_TRUE(same_pixels(read_image(path).view(), img.view())) << path;
    }
}

TEST(RowSink, WithoutCommitThePartialFileIsRemoved) {
    ScratchDir dir;
    const Image img = random_image(40, 40, 1, PixelType::u16, 6);
    for (const char* name : {"gone.tif", "gone.pgm", "gone.pfm", "gone.raw"}) {
        const std::string path = dir.file(name);
        const ImageShape s{40, 40, 1, std::string(name).ends_with(".pfm") ? PixelType::f32 : PixelType::u16};
        const Image data = random_image(40, 40, 1, s.type, 7);
        std::string partial;
        {
            io::SinkOptions options;
            options.tiff_tile_side = 16;
            const auto sink = io::create_row_sink(path, s, options);
            partial = sink->partial_path();
            EXPECT_EQ(partial, io::partial_path_for(path));
            sink->write_rows(0, data.view().roi(0, 0, 40, 20));
            EXPECT_TRUE(exists(partial)) << partial;
        }
        EXPECT_FALSE(exists(partial)) << partial;
        EXPECT_FALSE(exists(path)) << path;
    }
    // An existing file under the name stays as it was.
    const std::string kept = dir.file("kept.pgm");
    write_image(kept, img.view());
    {
        const auto sink = io::create_row_sink(kept, img.shape());
        sink->write_rows(0, random_image(40, 40, 1, PixelType::u16, 8).view());
    }
    EXPECT_TRUE(same_pixels(read_image(kept).view(), img.view()));
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
        EXPECT_EQ(e.path().filename(), "kept.pgm") << "left behind: " << e.path();
}

// keep_partial leaves the partial file when the sink goes without commit; reopen_partial resumes it,
// keeping the rows written before, and only the rows missing are written again.
TEST(RowSink, KeptPartialFileResumes) {
    ScratchDir dir;
    unsigned seed = 30;
    for (const char* ext : {".tif", ".ppm", ".pfm", ".raw"}) {
        const std::string path = dir.file(std::string("resumed") + ext);
        if (!checkable(path)) continue;
        const ImageShape s{45, 50, 3, std::string(ext) == ".pfm" ? PixelType::f32 : PixelType::u8};
        const Image img = random_image(s.width, s.height, s.channels, s.type, ++seed);
        io::SinkOptions options;
        options.tiff_tile_side = 16;
        options.keep_partial = true;
        // Tile rows 0-15 and 32-47 in the first run; bands a resumed run trusts are whole tile rows (the
        // journal records a band only after sync()).
        std::string partial;
        {
            const auto sink = io::create_row_sink(path, s, options);
            partial = sink->partial_path();
            sink->write_rows(32, img.view().roi(0, 32, s.width, 16));
            sink->write_rows(0, img.view().roi(0, 0, s.width, 16));
            sink->sync();
        }
        ASSERT_TRUE(exists(partial)) << partial;
        EXPECT_FALSE(exists(path));
        options.reopen_partial = true;
        {
            const auto sink = io::create_row_sink(path, s, options);
            sink->write_rows(48, img.view().roi(0, 48, s.width, 2));
            sink->write_rows(16, img.view().roi(0, 16, s.width, 16));
            sink->commit();
        }
        EXPECT_FALSE(exists(partial));
        EXPECT_TRUE(same_pixels(read_back(path, s).view(), img.view())) << path;
        // A partial file of another size is refused, naming the path, and left for the user to remove.
        {
            io::SinkOptions first = options;
            first.reopen_partial = false;
            const auto sink = io::create_row_sink(path, s, first);
            sink->write_rows(0, img.view().roi(0, 0, s.width, 16));
        }
        const ImageShape other{s.width, s.height + 17, s.channels, s.type};  // a tile row more
        EXPECT_TRUE(iotest::fails_naming([&] { io::create_row_sink(path, other, options); }, path, "remove it to start over"));
        std::filesystem::remove(partial);
    }
}

TEST(RowSink, RefusalsNameThePath) {
    ScratchDir dir;
    auto refuses = [&](const std::string& path, const ImageShape& s, const std::string& fragment, io::SinkOptions options = {}) {
        EXPECT_TRUE(iotest::fails_naming([&] { io::create_row_sink(path, s, options); }, path, fragment));
        EXPECT_FALSE(exists(path)) << path;
    };
    // Shapes the format cannot store.
    refuses(dir.file("two.pgm"), {8, 8, 2, PixelType::u8}, "");
    refuses(dir.file("float.ppm"), {8, 8, 3, PixelType::f32}, "");
    refuses(dir.file("int.pfm"), {8, 8, 1, PixelType::u16}, "");
    refuses(dir.file("four.pfm"), {8, 8, 4, PixelType::f32}, "");
    refuses(dir.file("empty.tif"), {0, 8, 1, PixelType::u8}, "");
    refuses(dir.file("image.bmp"), {8, 8, 1, PixelType::u8}, ".bmp");
    // Tile sides that are not multiples of 16 from 16 to 8192.
    for (const int side : {0, 8, 20, 8208}) {
        io::SinkOptions options;
        options.tiff_tile_side = side;
        refuses(dir.file("tiles.tif"), {64, 64, 1, PixelType::u8}, std::to_string(side), options);
    }
    EXPECT_FALSE(exists(io::partial_path_for(dir.file("tiles.tif"))));
    // A directory where the file should be, and a path ending in a slash.
    const std::string directory = dir.file("taken.tif");
    std::filesystem::create_directory(directory);
    EXPECT_TRUE(iotest::fails_naming([&] { io::create_row_sink(directory, {8, 8, 1, PixelType::u8}); }, directory, "directory"));
    const std::string slash = dir.file("sub.d") + "/";
    EXPECT_TRUE(iotest::fails_naming([&] { io::create_row_sink(slash, {8, 8, 1, PixelType::u8}); }, slash));
    // A directory that does not exist.
    const std::string missing = dir.file("missing/out.pgm");
    EXPECT_TRUE(iotest::fails_naming([&] { io::create_row_sink(missing, {8, 8, 1, PixelType::u8}); }, missing));
}

}  // namespace
}  // namespace apron

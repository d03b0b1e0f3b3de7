// 3-D rank filters (SPEC.md "Volumes", "Rank"): median, percentile and rank with a volume's element against a
// direct restatement written here from the SPEC (every cell of the W x H x D window read through the border in
// x, y and z, the valid samples sorted, the rank floor(rank * v / n) of the v valid ones taken), on both host
// backends, bit for bit; streamed z-slabs give the whole run's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "apron/pipeline.hpp"
#include "apron/stream.hpp"
#include "core/dispatch.hpp"
#include "test_io_support.hpp"
#include "test_support.hpp"

namespace apron::test {
namespace {

// A window: W x H x D cells about (W/2, H/2, D/2), `inside(i, j, k)` for the set ones (0-based in the box).
struct Window {
    std::string se;
    int w, h, d;
    std::function<bool(int, int, int)> inside;
    int cells() const {
        int n = 0;
        for (int k = 0; k < d; ++k)
            for (int j = 0; j < h; ++j)
                for (int i = 0; i < w; ++i) n += inside(i, j, k);
        return n;
    }
};

Window box(int w, int h, int d) {
    return {"rect:" + std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(d), w, h, d, [](int, int, int) { return true; }};
}
Window ball(int r) {
    return {"ball:" + std::to_string(r), 2 * r + 1, 2 * r + 1, 2 * r + 1, [r](int i, int j, int k) {
                const int x = i - r, y = j - r, z = k - r;
                return x * x + y * y + z * z <= r * r;
            }};
}
Window cross3() {
    return {"cross:3x3x3", 3, 3, 3, [](int i, int j, int k) { return (i == 1) + (j == 1) + (k == 1) >= 2; }};
}

// The SPEC's value as a double: the sample of rank floor(rank * v / n) of the v valid (non-NaN) ones of the n
// cells, NaN where none is valid. Samples compare as numbers with -0 before +0 (so the sign of a zero is kept).
std::vector<double> rank3(ConstImageView in, const Window& win, int rank, BorderMode mode, double value) {
    const int W = in.width(), H = in.height(), D = in.shape.depth, C = in.channels();
    const int n = win.cells();
    auto less = [](double a, double b) { return a < b || (a == 0 && b == 0 && std::signbit(a) && !std::signbit(b)); };
    std::vector<double> out;
    for (int z = 0; z < D; ++z)
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x)
                for (int c = 0; c < C; ++c) {
                    std::vector<double> valid;
                    for (int k = 0; k < win.d; ++k)
                        for (int j = 0; j < win.h; ++j)
                            for (int i = 0; i < win.w; ++i) {
                                if (!win.inside(i, j, k)) continue;
                                const int xi = border_index(x + i - win.w / 2, W, mode), yi = border_index(y + j - win.h / 2, H, mode),
                                          zi = border_index(z + k - win.d / 2, D, mode);
                                const double s = xi < 0 || yi < 0 || zi < 0 ? value : sample_at(in.plane(zi), xi, yi, c);
                                if (s == s) valid.push_back(s);
                            }
                    std::sort(valid.begin(), valid.end(), less);
                    const int v = int(valid.size());
                    out.push_back(v == 0 ? NAN : valid[std::size_t((long long)rank * v / n)]);
                }
    return out;
}

// Equal values with equal signs of zero, any NaN matching any NaN.
void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    std::size_t bad = 0, first = got.size();
    for (std::size_t k = 0; k < got.size(); ++k) {
        const bool same = (got[k] != got[k] && want[k] != want[k]) || (got[k] == want[k] && std::signbit(got[k]) == std::signbit(want[k]));
        if (!same) ++bad, first = std::min(first, k);
    }
    EXPECT_EQ(bad, 0u) << what << ": first difference at sample " << first << " (got " << (bad ? got[first] : 0) << ", want "
                       << (bad ? want[first] : 0) << ")";
}

const BorderMode all_modes[] = {BorderMode::constant, BorderMode::nearest, BorderMode::reflect, BorderMode::mirror, BorderMode::wrap};
const Backend host_backends[] = {Backend::cpu, Backend::reference};

// The operations' ranks for a window of n cells, as their specs say.
struct RankOp {
    std::string spec;  // without se
    std::function<int(int)> rank;
};
std::vector<RankOp> rank_ops() {
    return {{"median", [](int n) { return n / 2; }},
            {"percentile:p=25", [](int n) { return int(std::floor(n * 25 / 100.0)); }},
            {"percentile:p=100", [](int n) { return n - 1; }},
            {"rank:r=0", [](int) { return 0; }},
            {"rank:r=-2", [](int n) { return n - 2; }}};
}

std::string with_se(const std::string& op, const std::string& se, BorderMode mode, double value) {
    return op + (op.find(':') == std::string::npos ? ":" : ",") + "se=" + se + ",border=" + to_string(mode) + ",value=" +
           std::to_string(int(value));
}

TEST(VolumeRank, EveryShapeModeAndTypeMatchesTheDirectWindow) {
    const std::vector<Window> windows = {ball(1), ball(2), box(3, 3, 3), box(4, 3, 2), box(1, 1, 5), cross3()};
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const Window& win : windows)
            for (const BorderMode mode : all_modes) {
                const int channels = t == PixelType::u16 ? 2 : 1;
                const Image v = random_volume(7, 6, 5, channels, t, 17 + unsigned(mode), t == PixelType::f32 ? 0.15 : 0, 9);
                const double value = t == PixelType::f32 ? 1 : 3;
                const std::vector<RankOp> ops = rank_ops();
                const RankOp& op = ops[(std::size_t(mode) + win.se.size()) % ops.size()];
                const std::string spec = with_se(op.spec, win.se, mode, value);
                const auto want = rank3(v, win, op.rank(win.cells()), mode, value);
                for (const Backend b : host_backends)
                    expect_same(volume_samples(Pipeline({spec}).run(v, {.backend = b})), want, spec + " " + to_string(t) + " on " + to_string(b));
            }
}

TEST(VolumeRank, EveryOperationOnABallAndABox) {
    for (const Window& win : {ball(2), box(3, 5, 3)})
        for (const RankOp& op : rank_ops()) {
            const Image v = random_volume(9, 8, 7, 1, PixelType::u8, 5);
            const std::string spec = with_se(op.spec, win.se, BorderMode::reflect, 0);
            const auto want = rank3(v, win, op.rank(win.cells()), BorderMode::reflect, 0);
            for (const Backend b : host_backends) expect_same(volume_samples(Pipeline({spec}).run(v, {.backend = b})), want, spec);
        }
}

TEST(VolumeRank, TheFastKernelGivesTheReferencesBitsOnALargerVolume) {
    // Most voxels' windows lie inside: the fast kernel's offset path, with its border path along the faces.
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const std::string spec : {"median:se=ball:2", "median:se=rect:3x3x3,border=wrap", "percentile:p=80,se=ellipsoid:5x3x3,border=mirror",
                                       "rank:r=3,se=cross:3x5x3,border=constant,value=1"}) {
            const Image v = random_volume(37, 21, 11, t == PixelType::u8 ? 3 : 1, t, 29, t == PixelType::f32 ? 0.05 : 0);
            const Pipeline p({spec});
            const Image fast = p.run(v, {.backend = Backend::cpu, .threads = 2});
            const Image slow = p.run(v, {.backend = Backend::reference});
            EXPECT_TRUE(identical(fast.view().all_rows(), slow.view().all_rows())) << spec << " " << to_string(t);
            const std::string plan = p.describe(v.shape(), {.backend = Backend::cpu});
            EXPECT_NE(plan.find("x, y and z: "), std::string::npos) << plan;
            EXPECT_NE(plan.find("cpu.rank_volume"), std::string::npos) << plan;
        }
}

TEST(VolumeRank, OnePlaneOnePixelAndWindowsLargerThanTheVolume) {
    for (const BorderMode mode : all_modes) {
        // One plane: z reads that plane (or the constant) through the border.
        const Image flat = random_volume(6, 5, 1, 1, PixelType::u16, 3);
        // One voxel under a window of 5 x 5 x 5.
        const Image dot = random_volume(1, 1, 1, 1, PixelType::u8, 4);
        // A ball of radius 3 on a 2 x 3 x 2 volume: every mode reads far beyond the faces.
        const Image tiny = random_volume(2, 3, 2, 1, PixelType::f32, 6, 0.2, 7);
        for (const auto& [in, win] : {std::pair{&flat, ball(2)}, std::pair{&dot, box(5, 5, 5)}, std::pair{&tiny, ball(3)}}) {
            const std::string spec = with_se("median", win.se, mode, 2);
            const auto want = rank3(*in, win, win.cells() / 2, mode, 2);
            for (const Backend b : host_backends)
                expect_same(volume_samples(Pipeline({spec}).run(*in, {.backend = b})), want, spec + " on " + to_string(b));
        }
    }
}

TEST(VolumeRank, NanSamplesAreMissingAndAllNanGivesNan) {
    Image v = random_volume(6, 5, 4, 1, PixelType::f32, 8, 0.5);
    for (int x = 0; x < 6; ++x) v.row<float>(2 * 5 + 2)[x] = NAN;  // a row of NaN in plane 2
    for (const std::string op : {"median", "rank:r=-1", "percentile:p=10"})
        for (const BorderMode mode : {BorderMode::reflect, BorderMode::constant}) {
            const Window win = ball(1);
            const std::vector<RankOp> ops = rank_ops();
            const int n = win.cells();
            const int rank = op == "median" ? n / 2 : op == "rank:r=-1" ? n - 1 : int(std::floor(n * 10 / 100.0));
            const std::string spec = with_se(op, win.se, mode, 0);
            // border=constant with value NaN: the outside is missing too.
            const std::string nan_spec = op + (op.find(':') == std::string::npos ? ":" : ",") + "se=ball:1,border=constant,value=nan";
            for (const Backend b : host_backends) {
                expect_same(volume_samples(Pipeline({spec}).run(v, {.backend = b})), rank3(v, win, rank, mode, 0), spec);
                if (mode == BorderMode::constant) {
                    try {
                        expect_same(volume_samples(Pipeline({nan_spec}).run(v, {.backend = b})), rank3(v, win, rank, mode, NAN), nan_spec);
                    } catch (const Error&) {
                        // value=nan refused by the registry: nothing to compare.
                    }
                }
            }
        }
    // Every sample NaN: NaN out.
    Image all_nan = random_volume(3, 3, 3, 1, PixelType::f32, 9, 1.0);
    const Image out = Pipeline({"median:se=rect:3x3x3"}).run(all_nan, {.backend = Backend::cpu});
    for (const double s : volume_samples(out)) EXPECT_TRUE(std::isnan(s));
}

TEST(VolumeRank, APlaneElementFiltersEachPlaneAlone) {
    const Image v = random_volume(9, 7, 4, 1, PixelType::u8, 12);
    for (const std::string spec : {"median:se=rect:3x3", "median:se=disk:2,border=wrap", "median:se=rect:3x3x1", "median:se=ball:0"}) {
        const Image out = Pipeline({spec}).run(v, {.backend = Backend::cpu});
        for (int z = 0; z < 4; ++z) {
            const Image plane = copy_of(v.view().plane(z));
            EXPECT_TRUE(identical(out.view().plane(z), Pipeline({spec}).run(plane, {.backend = Backend::reference}).view())) << spec;
        }
        EXPECT_EQ(Pipeline({spec}).describe(v.shape(), {.backend = Backend::cpu}).find("x, y and z"), std::string::npos) << spec;
    }
}

TEST(VolumeRank, AVolumesElementOnAPlainImageIsAVolumeOfOnePlane) {
    const Image img = random_image(11, 8, 1, PixelType::u16, 13);
    for (const BorderMode mode : all_modes) {
        const std::string spec = with_se("median", "ball:2", mode, 5);
        const auto want = rank3(img, ball(2), ball(2).cells() / 2, mode, 5);
        for (const Backend b : host_backends) expect_same(volume_samples(Pipeline({spec}).run(img, {.backend = b})), want, spec);
    }
}

TEST(VolumeRank, AMaskFileOfPlanesIsAVolumesElement) {
    iotest::ScratchDir dir;
    // 3 x 2 x 3: plane 0 the left column, plane 1 full, plane 2 one cell; anchor (1, 1, 1).
    const std::string path = dir.file("el3.se");
    std::ofstream(path) << "3 2 3\n1 0 0\n1 0 0\n\n1 1 1\n1 1 1\n\n0 0 0\n0 1 0\n";
    const bool cells[3][2][3] = {{{1, 0, 0}, {1, 0, 0}}, {{1, 1, 1}, {1, 1, 1}}, {{0, 0, 0}, {0, 1, 0}}};
    const Window win{path, 3, 2, 3, [cells](int i, int j, int k) { return cells[k][j][i]; }};
    const Image v = random_volume(8, 6, 5, 1, PixelType::u8, 14);
    for (const BorderMode mode : all_modes) {
        const std::string spec = with_se("rank:r=2", path, mode, 7);
        const auto want = rank3(v, win, 2, mode, 7);
        for (const Backend b : host_backends) expect_same(volume_samples(Pipeline({spec}).run(v, {.backend = b})), want, spec);
    }
    // Windows wholly left or right of their anchor (no column read on one side), on a volume wider than them.
    std::ofstream(dir.file("left.se")) << "3 1 2\n1 0 0\n1 0 0\n";
    std::ofstream(dir.file("right.se")) << "5 2 3\n0 0 0 1 1\n0 0 0 0 1\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 1 0\n0 0 0 0 1\n";
    const Window left{dir.file("left.se"), 3, 1, 2, [](int i, int, int) { return i == 0; }};
    const bool right_cells[3][2][5] = {{{0, 0, 0, 1, 1}, {0, 0, 0, 0, 1}}, {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}, {{0, 0, 0, 1, 0}, {0, 0, 0, 0, 1}}};
    const Window right{dir.file("right.se"), 5, 2, 3, [right_cells](int i, int j, int k) { return right_cells[k][j][i]; }};
    for (const Window& win : {left, right})
        for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32}) {
            const Image wide = random_volume(23, 6, 4, 2, t, 15, t == PixelType::f32 ? 0.1 : 0);
            const std::string spec = with_se("median", win.se, BorderMode::reflect, 0);
            const auto want = rank3(wide, win, win.cells() / 2, BorderMode::reflect, 0);
            for (const Backend b : host_backends) expect_same(volume_samples(Pipeline({spec}).run(wide, {.backend = b})), want, spec);
        }
    // Weights other than 0 and 1, or no cell set, are refused naming se.
    std::ofstream(dir.file("bad.se")) << "1 1 2\n1\n2\n";
    std::ofstream(dir.file("empty.se")) << "1 1 2\n0\n0\n";
    for (const std::string& bad : {dir.file("bad.se"), dir.file("empty.se")}) {
        try {
            (void)parse_operation("median:se=" + bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("se"), std::string::npos) << e.what();
        }
    }
}

TEST(VolumeRank, ZSlabsOfAStreamedVolumeGiveTheWholeRunsBytes) {
    iotest::ScratchDir dir;
    const int w = 23, h = 9, d = 17;
    const Image volume = random_volume(w, h, d, 1, PixelType::u16, 21, 0, 50);
    const std::string in = dir.file("in.raw"), out = dir.file("out.raw");
    {
        std::ofstream f(in, std::ios::binary);
        for (int r = 0; r < int(volume.shape().rows()); ++r)
            f.write(reinterpret_cast<const char*>(volume.view().row_bytes(r)), std::streamsize(volume.shape().row_bytes()));
    }
    for (const std::string spec : {"median:se=ball:2", "median:se=rect:3x3x5,border=wrap", "percentile:p=30,se=rect:3x1x3,border=constant,value=9",
                                   "rank:r=-1,se=ball:1,border=mirror"})
        for (const std::vector<std::string>& specs : {std::vector<std::string>{spec}, std::vector<std::string>{spec, "gaussian:sigma=1,sigma_z=1"}}) {
            const Pipeline p(specs);
            const Image whole = p.run(volume, {.backend = Backend::cpu});
            StreamOptions so;
            so.run.backend = Backend::cpu;
            so.raw = std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(d) + "x1:u16";
            so.band_rows = 3 * h;  // slabs of 3 planes
            const StreamReport r = stream_filter(in, out, p, so);
            EXPECT_GT(r.bands, 1) << spec;
            std::ifstream f(out, std::ios::binary);
            const std::string got((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            std::string want;
            for (int y = 0; y < int(volume.shape().rows()); ++y)
                want.append(reinterpret_cast<const char*>(whole.view().row_bytes(y)), volume.shape().row_bytes());
            EXPECT_TRUE(got == want) << specs.size() << " ops from " << spec << ": the slabs differ from the whole run";
        }
}

TEST(VolumeRank, BandsOfAStreamedImageUnderAVolumesElementGiveTheWholeRunsBytes) {
    // A 2-D image streamed in bands of rows: a volume's element reads its one plane, its rows' reach the halo.
    iotest::ScratchDir dir;
    const Image in = random_image(61, 97, 1, PixelType::u8, 22);
    write_image(dir.file("in.pgm"), in);
    for (const std::string spec : {"median:se=ball:2", "percentile:p=60,se=rect:3x7x3,border=wrap", "rank:r=1,se=cross:5x3x3,border=constant,value=4"}) {
        const Pipeline p({spec, "dilate:se=disk:1"});
        StreamOptions o;
        o.run.backend = Backend::cpu;
        o.band_rows = 10;
        const StreamReport r = stream_filter(dir.file("in.pgm"), dir.file("out.pgm"), p, o);
        EXPECT_GT(r.bands, 1) << spec;
        EXPECT_TRUE(identical(read_image(dir.file("out.pgm")), p.run(in, {.backend = Backend::reference}))) << spec;
    }
}

TEST(VolumeRank, BadElementsAreRefusedNamingTheParameter) {
    auto message = [](const std::string& spec) -> std::string {
        try {
            (void)parse_operation(spec);
        } catch (const Error& e) {
            return e.what();
        }
        return "accepted";
    };
    EXPECT_NE(message("median:se=ball:200").find("se"), std::string::npos);
    EXPECT_NE(message("median:se=rect:3x3x0").find("se"), std::string::npos);
    EXPECT_NE(message("median:se=rect:4097x4097x2").find("se"), std::string::npos);
    EXPECT_NE(message("rank:r=27,se=rect:3x3x3").find("r:"), std::string::npos);
    EXPECT_EQ(message("rank:r=26,se=rect:3x3x3"), "accepted");
    EXPECT_EQ(message("rank:r=-27,se=rect:3x3x3"), "accepted");
    EXPECT_EQ(message("percentile:p=50,se=ellipsoid:5x5x3"), "accepted");
}

} // namespace
} // namespace apron::test

// Masks and structuring elements given as planes (GivenMask, as the Python bindings pass 3-D NumPy arrays):
// they are the 'W H D' mask files and 3-D elements of the command line, so a given volume's mask or element
// must give the same steps and the same bits as its file or shape, and be refused as a file is, by name.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "apron/errors.hpp"
#include "apron/ops.hpp"
#include "apron/pipeline.hpp"
#include "test_io_support.hpp"
#include "test_support.hpp"

namespace apron::test {
namespace {

using iotest::ScratchDir;

Image random_volume(int w, int h, int d, PixelType t, std::uint32_t seed) {
    Image v(ImageShape{w, h, 1, t, d});
    std::mt19937 rng(seed);
    with_type(t, [&]<class T>() {
        for (int y = 0; y < int(v.shape().rows()); ++y)
            for (int x = 0; x < w; ++x) {
                if constexpr (std::is_same_v<T, float>)
                    v.row<T>(y)[x] = std::uniform_real_distribution<float>(-1.0f, 2.0f)(rng);
                else
                    v.row<T>(y)[x] = T(std::uniform_int_distribution<int>(0, int(highest_value<T>()))(rng));
            }
    });
    return v;
}

// D planes of W x H weights, plane k's weight (i, j) = f(i, j, k).
template <class F>
std::vector<Mask> planes_of(int w, int h, int d, F f) {
    std::vector<Mask> planes;
    for (int k = 0; k < d; ++k) {
        std::vector<double> weights;
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i) weights.push_back(f(i, j, k));
        planes.emplace_back(w, h, std::move(weights));
    }
    return planes;
}

// The planes as a 'W H D' mask file's text.
std::string mask_file_text(const std::vector<Mask>& planes) {
    std::string text = std::to_string(planes[0].width) + " " + std::to_string(planes[0].height) + " " +
                       std::to_string(planes.size()) + "\n";
    for (const Mask& m : planes) {
        for (int j = 0; j < m.height; ++j) {
            for (int i = 0; i < m.width; ++i) text += std::to_string(m.at(i, j)) + " ";
            text += "\n";
        }
        text += "\n";
    }
    return text;
}

Image run(const OpProgram& op, const Image& in, PixelType out) {
    Pipeline p;
    p.add(op);
    return p.run(in, {.backend = Backend::cpu, .out_type = out});
}

std::string error_of(const std::string& spec, const GivenMasks& given) {
    try {
        (void)parse_operation(spec, given);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(GivenPlanes, AVolumesMaskGivesTheBitsOfItsMaskFile) {
    ScratchDir dir;
    // Even sides and depth, asymmetric weights, a plane of zeros (skipped by both).
    const std::vector<Mask> planes = planes_of(4, 3, 4, [](int i, int j, int k) {
        return k == 2 ? 0.0 : 0.25 * (i - 1) + 0.5 * j - 0.125 * k + (i == j ? 1.0 : 0.0);
    });
    const std::string path = dir.file("m.kernel");
    std::ofstream(path) << mask_file_text(planes);
    const Image v = random_volume(9, 7, 6, PixelType::u16, 11);
    for (const char* op : {"correlate", "convolve"})
        for (const char* tail : {",border=reflect", ",border=constant,value=9", ",border=wrap,normalize=sum,scale=2"}) {
            const std::string given_spec = std::string(op) + ":mask=<array 4x3x4>" + tail;
            const OpProgram from_file = parse_operation(std::string(op) + ":mask=" + path + tail);
            const OpProgram given = parse_operation(given_spec, {{"mask", GivenMask(planes)}});
            EXPECT_EQ(given.steps.size(), from_file.steps.size()) << given_spec;
            EXPECT_TRUE(identical(run(given, v, PixelType::f32), run(from_file, v, PixelType::f32))) << given_spec;
        }
}

TEST(GivenPlanes, OnePlaneIsTheTwoDimensionalMask) {
    const Mask m(3, 2, {1, 2, 3, 4, 5, 6});
    const OpProgram one = parse_operation("correlate:mask=<array 1x2x3>", {{"mask", GivenMask(std::vector<Mask>{m})}});
    ASSERT_EQ(one.steps.size(), 1u);
    EXPECT_EQ(std::get<LinearStep>(one.steps[0].action).mask, m);
    const OpProgram e = parse_operation("erode:se=<array 1x3x3>", {{"se", GivenMask(planes_of(3, 3, 1, [](int i, int j, int) {
                                                                         return double(i == 1 || j == 1);
                                                                     }))}});
    ASSERT_EQ(e.steps.size(), 1u);
    EXPECT_EQ(e.steps[0].axes, Axes::plane);
}

TEST(GivenPlanes, AVolumesElementGivesTheBitsOfItsShapeAndFile) {
    ScratchDir dir;
    // ball:2 as planes of 0/1 cells.
    const std::vector<Mask> ball = planes_of(5, 5, 5, [](int i, int j, int k) {
        return double((i - 2) * (i - 2) + (j - 2) * (j - 2) + (k - 2) * (k - 2) <= 4);
    });
    const std::string path = dir.file("ball2.se");
    std::ofstream(path) << mask_file_text(ball);
    for (const PixelType t : {PixelType::u8, PixelType::f32}) {
        const Image v = random_volume(8, 7, 6, t, 5);
        for (const char* op : {"dilate", "erode", "open", "gradient", "blackhat"})
            for (const char* tail : {"", ",border=reflect", ",border=constant,value=7", ",iterations=2"}) {
                const std::string spec = std::string(op) + ":se=ball:2" + tail;
                const Image want = run(parse_operation(spec), v, t);
                const OpProgram given = parse_operation(std::string(op) + ":se=<array 5x5x5>" + tail, {{"se", GivenMask(ball)}});
                EXPECT_TRUE(identical(run(given, v, t), want)) << spec << " given";
                EXPECT_TRUE(identical(run(parse_operation(std::string(op) + ":se=" + path + tail), v, t), want)) << spec << " file";
            }
    }
}

TEST(GivenPlanes, BadPlanesAreRefusedNamingTheParameter) {
    const Mask a(3, 3, std::vector<double>(9, 1.0)), b(3, 2, std::vector<double>(6, 1.0));
    EXPECT_EQ(error_of("correlate:mask=<array 2x3x3>", {{"mask", GivenMask(std::vector<Mask>{a, b})}}),
              "--op correlate:mask=<array 2x3x3>: mask: <array 2x3x3>: plane 1 is 3x2, plane 0 3x3 (every plane of a mask "
              "has one size)");
    EXPECT_NE(error_of("dilate:se=<array 2x3x3>", {{"se", GivenMask(std::vector<Mask>{a, b})}}).find("se: <array 2x3x3>: plane 1"),
              std::string::npos);
    EXPECT_NE(error_of("correlate:mask=<array 0x1x1>", {{"mask", GivenMask(std::vector<Mask>{})}}).find("mask: <array 0x1x1>: no planes"),
              std::string::npos);
    // At most 4097 x 4097 weights in all, as a file's (the copies share one plane's weights).
    const Mask wide(4097, 2, std::vector<double>(2 * 4097, 1.0));
    EXPECT_NE(error_of("correlate:mask=<array 4097x2x4097>", {{"mask", GivenMask(std::vector<Mask>(4097, wide))}})
                  .find("has more than 16785409 weights"),
              std::string::npos);
    // Elements: 0/1 weights, one set cell in all, at most 255 planes.
    const Mask zeros(3, 3, std::vector<double>(9, 0.0)), two(1, 1, {2});
    EXPECT_NE(error_of("erode:se=<array 2x3x3>", {{"se", GivenMask(std::vector<Mask>{zeros, zeros})}}).find("se: <array 2x3x3>: structuring element has no cell set to 1"),
              std::string::npos);
    EXPECT_NE(error_of("erode:se=<array 2x1x1>", {{"se", GivenMask(std::vector<Mask>{Mask(1, 1, {1}), two})}}).find("must be 0 or 1"),
              std::string::npos);
    EXPECT_NE(error_of("dilate:se=<array 256x1x1>", {{"se", GivenMask(std::vector<Mask>(256, Mask(1, 1, {1})))}}).find("of 256 planes (at most 255)"),
              std::string::npos);
    // The accessors of 2-D weights refuse planes by name.
    const GivenMasks given{{"se", GivenMask(std::vector<Mask>{a, a})}, {"mask", GivenMask(std::vector<Mask>{a, a})}};
    OpArgs args("op:se=<array 2x3x3>", {{"se", "<array 2x3x3>"}, {"mask", "<array 2x3x3>"}}, nullptr);
    args.use_given_masks(&given);
    for (const auto& [name, read] : {std::pair<std::string, std::function<void()>>{"se", [&] { (void)args.element("se"); }},
                                     {"mask", [&] { (void)args.mask("mask"); }}}) {
        try {
            read();
            ADD_FAILURE() << name << ": planes taken as 2-D weights";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), "--op op:se=<array 2x3x3>: " + name + ": takes 2-D weights (rows x columns); these have 2 planes");
        }
    }
    EXPECT_EQ(args.element_planes("se").size(), 2u);
    EXPECT_EQ(args.mask_planes("mask").size(), 2u);
}

TEST(GivenPlanes, ElementFilesOfPlanesAreCheckedAsElements) {
    ScratchDir dir;
    const std::string path = dir.file("bad.se");
    std::ofstream(path) << "1 1 2\n1\n\n3\n";
    try {
        (void)parse_operation("dilate:se=" + path);
        ADD_FAILURE() << "a weight of 3 was taken";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("se: " + path + ": structuring element weights must be 0 or 1"), std::string::npos)
            << e.what();
    }
    try {
        (void)parse_operation("dilate:se=oval:3x3x3");
        ADD_FAILURE() << "an unknown shape was taken";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown shape 'oval'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ball:R"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace apron::test

// Volumes on the CUDA backend (SPEC.md "Volumes"): every 3-D linear filter within the float tolerance of the
// CPU backend, morphology with 3-D elements bit-identical to it, from host volumes and from device volumes
// (pitched rows, so steps along z run a z view per row).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "apron/pipeline.hpp"
#include "core/dispatch.hpp"
#include "core/overrides.hpp"
#include "cuda/launch_record.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

namespace apron::test {
namespace {

Image volume(int w, int h, int d, int c, PixelType t, std::uint32_t seed) {
    Image v(ImageShape{w, h, c, t, d});
    std::mt19937 rng(seed);
    with_type(t, [&]<class T>() {
        for (int y = 0; y < int(v.shape().rows()); ++y)
            for (int k = 0; k < w * c; ++k) {
                if constexpr (std::is_same_v<T, float>) v.row<T>(y)[k] = std::uniform_real_distribution<float>(-1, 2)(rng);
                else v.row<T>(y)[k] = T(std::uniform_int_distribution<int>(0, int(highest_value<T>()))(rng));
            }
    });
    return v;
}

double worst(ConstImageView a, ConstImageView b) { return max_abs_diff(a.all_rows(), b.all_rows()); }

TEST(CudaVolumes, LinearFiltersAlongZMatchTheCpuBackend) {
    REQUIRE_GPU();
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const int c : {1, 3})
            for (const char* spec : {"gaussian:sigma=2,sigma_z=1", "gaussian:sigma=1,sigma_z=2,border=wrap", "box:width=3,depth=5",
                                     "sobel:dx=0,dz=1,border=nearest", "unsharp:sigma=1,sigma_z=1,amount=1",
                                     "gaussian:sigma=1,sigma_z=1,nan=ignore"}) {
                const Image v = volume(37, 29, 11, c, t, 3 + c);
                const Image cpu = Pipeline({spec}).run(v, {.backend = Backend::cpu, .out_type = PixelType::f32});
                const Image gpu = Pipeline({spec}).run(v, {.backend = Backend::cuda, .out_type = PixelType::f32});
                EXPECT_LE(worst(cpu, gpu), 2e-5 * (t == PixelType::f32 ? 2 : type_max(t)) * 4) << spec << " " << to_string(t) << " c=" << c;
            }
}

bool ran_fused_pass() {
    for (const KernelChoice& k : cuda::launches())
        if (k.family == "cuda.separable_volume") return true;
    return false;
}

// The fused volume pass (cuda/separable_volume_impl.cuh): a volume's separable plane step and its z column in
// one kernel (APRON_VOLUME_FUSED=1), against the CPU backend and against the two passes it replaces, on
// volumes of one voxel, fewer planes than the z reach, several blocks along z, and every border; both of
// the kernel's row counts (APRON_VOLUME_RY).
TEST(CudaVolumes, FusedVolumePassMatchesTheTwoPassesAndTheCpuBackend) {
    REQUIRE_GPU();
    struct Shape {
        int w, h, d;
    };
    const Shape shapes[] = {{1, 1, 1}, {5, 3, 2}, {37, 29, 11}, {64, 64, 16}, {200, 130, 90}, {129, 67, 3}};
    const std::string specs[] = {"gaussian:sigma=2,sigma_z=1",   "gaussian:sigma=0.7,sigma_z=0.6,border=wrap",
                                 "gaussian:sigma=2.6,sigma_y=1,sigma_z=1,border=mirror",
                                 "gaussian:sigma=1.2,sigma_z=1,border=constant,value=7",
                                 "gaussian:sigma=1,sigma_z=1,border=nearest", "gaussian:sigma=1.5,sigma_z=0.4,border=reflect"};
    int fused_runs = 0;  // the plane step is a fused candidate where the planner made it separable
    for (const int rows : {2, 4})
        for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
            for (const Shape& sh : shapes)
                for (const std::string& spec : specs) {
                    const Image v = volume(sh.w, sh.h, sh.d, 1, t, 7 + sh.w);
                    const std::string what = spec + " " + to_string(t) + " " + std::to_string(sh.w) + "x" + std::to_string(sh.h) +
                                             "x" + std::to_string(sh.d) + " RY=" + std::to_string(rows);
                    Overrides o = overrides();
                    o.volume_rows = rows;
                    o.volume_fused = true;
                    Image fused, two;
                    {
                        OverrideScope scope(o);
                        cuda::clear_launches();
                        fused = Pipeline({spec}).run(v, {.backend = Backend::cuda});
                        fused_runs += ran_fused_pass();
                        o.volume_fused = false;
                        OverrideScope off(o);
                        cuda::clear_launches();
                        two = Pipeline({spec}).run(v, {.backend = Backend::cuda});
                        EXPECT_FALSE(ran_fused_pass()) << what;
                    }
                    const Image cpu = Pipeline({spec}).run(v, {.backend = Backend::cpu});
                    // The two passes' z kernels may group equal taps (the run-time kernel), so the sums agree
                    // within float rounding, and integers within one unit; so with the CPU.
                    EXPECT_LE(worst(fused, two), t == PixelType::f32 ? 1e-6 : 1) << what;
                    EXPECT_LE(worst(fused, cpu), t == PixelType::f32 ? 1e-5 : 1) << what;
                }
    EXPECT_GT(fused_runs, 100);
}

// The same bits whatever the pass's tiling: a volume filtered whole and as its planes' halves with their z
// halo (the slabs a streamed run makes) agree exactly.
TEST(CudaVolumes, FusedVolumePassGivesTheSameBitsOnSlabs) {
    REQUIRE_GPU();
    const Image v = volume(150, 70, 40, 1, PixelType::f32, 9);
    const char* spec = "gaussian:sigma=2,sigma_z=1,border=reflect";
    Overrides o = overrides();
    o.volume_fused = true;
    OverrideScope fused(o);
    const Image whole = Pipeline({spec}).run(v, {.backend = Backend::cuda});
    // Planes 17 .. 39 with planes 14 .. 16 as their halo: output planes 17 .. 36 see only real planes.
    ImageShape s = v.shape();
    s.depth = 26;
    Image slab(s);
    for (int r = 0; r < int(s.rows()); ++r)
        std::memcpy(slab.view().row_bytes(r), v.view().row_bytes(r + 14 * s.height), s.row_bytes());
    const Image part = Pipeline({spec}).run(slab, {.backend = Backend::cuda});
    for (int z = 3; z < 23; ++z)
        for (int y = 0; y < s.height; ++y)
            ASSERT_EQ(std::memcmp(part.view().row_bytes(z * s.height + y), whole.view().row_bytes((z + 14) * s.height + y),
                                  s.row_bytes()),
                      0)
                << "plane " << z + 14 << " row " << y;
}

TEST(CudaVolumes, MorphologyWithVolumeElementsIsBitIdenticalToTheCpuBackend) {
    REQUIRE_GPU();
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::f32})
        for (const char* spec : {"dilate:se=ball:3", "erode:se=ball:2,border=reflect", "dilate:se=rect:5x3x3",
                                 "erode:se=cross:3x3x3,border=constant,value=9", "gradient:se=ellipsoid:5x5x3", "open:se=ball:1"}) {
            const Image v = volume(41, 23, 9, t == PixelType::u8 ? 4 : 1, t, 17);
            const Image cpu = Pipeline({spec}).run(v, {.backend = Backend::cpu});
            const Image gpu = Pipeline({spec}).run(v, {.backend = Backend::cuda});
            EXPECT_EQ(worst(cpu, gpu), 0) << spec << " " << to_string(t);
        }
}

// Rectangles on a volume: the plane step runs every plane in one launch of the tiled kernels (the fast
// interior tiles and the ring, as blockIdx.z), the passes and the wide colour chain once per plane; each
// bit-identical to the CPU backend, on planes large enough for the fast tiles and in every border mode.
TEST(CudaVolumes, RectangleMorphologyOnPlanesInOneLaunch) {
    REQUIRE_GPU();
    struct Case {
        const char* spec;
        PixelType type;
        int channels, width;
        bool one_launch;  // the plane step: one launch (else one per plane)
    };
    const Case cases[] = {
        // Rows of 16-byte multiples (the executor packs a volume's rows): the fast kernel's tiles take part.
        {"dilate:se=rect:5x5x5", PixelType::u16, 1, 304, true},
        {"erode:se=rect:7x3x3,border=reflect", PixelType::u8, 1, 304, true},
        {"dilate:se=rect:3x9x2,border=wrap", PixelType::u8, 3, 304, true},
        {"erode:se=rect:4x4x2,border=constant,value=7", PixelType::u16, 4, 304, true},
        {"dilate:se=rect:5x5x3,border=nearest", PixelType::f32, 1, 304, true},
        {"erode:se=rect:6x2x3,border=mirror", PixelType::f32, 3, 301, true},
        {"dilate:se=rect:5x3x3", PixelType::u8, 1, 301, true},  // unaligned rows: the general kernel alone
        {"dilate:se=rect:70x3x3", PixelType::u8, 1, 304, false},  // the separable passes
        {"erode:se=rect:12x3x3", PixelType::u8, 3, 304, false},   // the chain of fast passes
    };
    for (const Case& c : cases) {
        const Image v = volume(c.width, 141, 6, c.channels, c.type, 23);
        const Image cpu = Pipeline({c.spec}).run(v, {.backend = Backend::cpu});
        cuda::clear_launches();
        const Image gpu = Pipeline({c.spec}).run(v, {.backend = Backend::cuda});
        int rect_launches = 0;
        for (const KernelChoice& k : cuda::launches()) rect_launches += k.family == "cuda.morph_rect";
        EXPECT_EQ(worst(cpu, gpu), 0) << c.spec << " " << to_string(c.type) << " c=" << c.channels;
        // The plane step and the step along z (one launch on the z view) record one launch each when batched.
        if (c.one_launch) EXPECT_EQ(rect_launches, 2) << c.spec;
        else EXPECT_GE(rect_launches, 6) << c.spec;
    }
}

#if APRON_HAVE_CUDA
TEST(CudaVolumes, DeviceVolumesWithPaddedRowsRunInPlace) {
    REQUIRE_GPU();
    const Image v = volume(33, 17, 7, 1, PixelType::u16, 5);
    ImageShape s = v.shape();
    const std::size_t pitch = s.row_bytes() + 14;
    void *in = nullptr, *out = nullptr;
    ASSERT_EQ(cudaMalloc(&in, pitch * std::size_t(s.rows())), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, pitch * std::size_t(s.rows())), cudaSuccess);
    ASSERT_EQ(cudaMemcpy2D(in, pitch, v.view().data, v.pitch(), s.row_bytes(), std::size_t(s.rows()), cudaMemcpyHostToDevice),
              cudaSuccess);
    const ConstImageView din{static_cast<const std::byte*>(in), s, pitch, Memory::device};
    const ImageView dout{static_cast<std::byte*>(out), s, pitch, Memory::device};
    for (const char* spec : {"gaussian:sigma=1.5,sigma_z=1.5", "dilate:se=ball:2"}) {
        Pipeline({spec}).run(din, dout, {.backend = Backend::cuda});
        Image got(s);
        ASSERT_EQ(cudaMemcpy2D(got.view().data, got.pitch(), out, pitch, s.row_bytes(), std::size_t(s.rows()), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        const Image cpu = Pipeline({spec}).run(v, {.backend = Backend::cpu});
        EXPECT_LE(worst(cpu, got), 1) << spec;
    }
    cudaFree(in);
    cudaFree(out);
}
#endif

} // namespace
} // namespace apron::test

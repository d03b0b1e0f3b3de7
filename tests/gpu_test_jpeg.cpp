// GpuJpegDecoder (src/cuda/gpu_jpeg.hpp) against the CPU decoder (libjpeg-turbo, decode_image): smooth random
// pictures encoded by apron's own encoder and, for what it does not offer (other samplings, progressive and
// multi-scan files, other colour spaces and component counts), by libjpeg-turbo directly; every backend the
// device has. Each comparison prints its largest and mean difference, so that the bounds below can follow
// what the GPUs measure. Skips without a GPU, and without nvJPEG in the build (but for the stub's test).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <jpeglib.h>  // after <cstdio>: it needs FILE and size_t

#include "apron/errors.hpp"
#include "apron/io.hpp"
#include "cuda/gpu_jpeg.hpp"
#include "gpu_test_support.hpp"
#include "test_support.hpp"

using namespace apron;
using cuda::GpuJpegBackend;
using cuda::GpuJpegDecoder;

#define REQUIRE_NVJPEG()                                                                 \
    REQUIRE_GPU();                                                                       \
    if (!cuda::gpu_jpeg_built()) GTEST_SKIP() << "nvJPEG is not in this build"

namespace {

// How far the GPU's samples may be from libjpeg-turbo's (gpu_jpeg.hpp says where the differences come from):
// the largest |difference| of a sample, and the mean over images of at least mean_needs samples (a mean
// over the 1x1 and 17x9 pictures says nothing).
struct Bound {
    int largest;
    double mean;
};
constexpr Bound gray_bound{2, 0.25};
constexpr Bound colour_bound{4, 0.5};
constexpr std::size_t mean_needs = 4096;

const int sizes[][2] = {{1, 1}, {17, 9}, {641, 479}};

// A random picture without edges: per channel a level and three long cosine waves of random direction and
// phase (wavelengths 128-512 pixels, at most 75 levels together), so that chroma changes by a few levels a
// pixel at most and the upsampling of subsampled chroma is exercised without being dominated by it.
Image smooth_image(int w, int h, int channels, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    struct Wave {
        double kx, ky, phase, amplitude;
    };
    std::vector<double> level(std::size_t(channels), 0.0);
    std::vector<Wave> waves;
    for (int c = 0; c < channels; ++c) {
        level[std::size_t(c)] = 90 + 76 * unit(rng);
        for (int i = 0; i < 3; ++i) {
            constexpr double turn = 2 * std::numbers::pi;
            const double length = 128 + 384 * unit(rng), angle = turn * unit(rng);
            waves.push_back({turn * std::cos(angle) / length, turn * std::sin(angle) / length, turn * unit(rng),
                             8 + 17 * unit(rng)});
        }
    }
    Image img(w, h, channels, PixelType::u8);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c) {
                double value = level[std::size_t(c)];
                for (int i = 0; i < 3; ++i) {
                    const Wave& wave = waves[std::size_t(c * 3 + i)];
                    value += wave.amplitude * std::cos(wave.kx * x + wave.ky * y + wave.phase);
                }
                img.row<std::uint8_t>(y)[x * channels + c] = std::uint8_t(std::lround(std::clamp(value, 0.0, 255.0)));
            }
    return img;
}

std::vector<std::uint8_t> apron_jpeg(const Image& img, int quality, int orientation = 0) {
    WriteOptions options;
    options.jpeg_quality = quality;
    options.metadata.orientation = orientation;
    return encode_image(ImageFormat::jpeg, img.view(), "picture.jpg", options);
}

// ---- libjpeg-turbo directly, for the files apron's encoder does not write --------------------------------

struct Encoding {
    int quality = 90;
    int luma_h = 2, luma_v = 2;  // the luma sampling factors over chroma's 1x1: 2x2 is 4:2:0
    J_COLOR_SPACE in = JCS_RGB;  // the pixels' colour space (JCS_GRAYSCALE, JCS_RGB, JCS_CMYK, JCS_UNKNOWN)
    J_COLOR_SPACE stored = JCS_UNKNOWN;  // the file's, when not libjpeg's default for `in`
    bool progressive = false;
    bool scan_per_component = false;  // sequential, one scan per component (not interleaved)
    bool arithmetic = false;
    int restart_rows = 0;
};

struct LibjpegError {
    jpeg_error_mgr manager;  // first: libjpeg hands back a pointer to it
    std::jmp_buf jump;
};

[[noreturn]] void on_libjpeg_error(j_common_ptr c) { std::longjmp(reinterpret_cast<LibjpegError*>(c->err)->jump, 1); }

// Plain C calls only after the setjmp, so that its longjmp skips no destructor.
bool compress(jpeg_compress_struct* c, LibjpegError* error, const std::uint8_t* pixels, int w, int h, int components,
              const Encoding* e, jpeg_scan_info* scans, unsigned char** out, unsigned long* size) {
    if (setjmp(error->jump)) return false;
    c->err = jpeg_std_error(&error->manager);
    error->manager.error_exit = on_libjpeg_error;
    jpeg_create_compress(c);
    jpeg_mem_dest(c, out, size);
    c->image_width = JDIMENSION(w);
    c->image_height = JDIMENSION(h);
    c->input_components = components;
    c->in_color_space = e->in;
    jpeg_set_defaults(c);
    if (e->stored != JCS_UNKNOWN) jpeg_set_colorspace(c, e->stored);
    jpeg_set_quality(c, e->quality, TRUE);
    if (c->jpeg_color_space == JCS_YCbCr) {
        c->comp_info[0].h_samp_factor = e->luma_h;
        c->comp_info[0].v_samp_factor = e->luma_v;
        for (int k = 1; k < 3; ++k) c->comp_info[k].h_samp_factor = c->comp_info[k].v_samp_factor = 1;
    }
    if (e->progressive) jpeg_simple_progression(c);
    if (e->scan_per_component) {
        for (int k = 0; k < c->num_components; ++k) scans[k] = {1, {k, 0, 0, 0}, 0, 63, 0, 0};
        c->scan_info = scans;
        c->num_scans = c->num_components;
    }
    c->arith_code = e->arithmetic ? TRUE : FALSE;
    c->restart_in_rows = e->restart_rows;
    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        const std::size_t row_bytes = std::size_t(w) * std::size_t(components);
        JSAMPROW row = const_cast<JSAMPROW>(pixels + std::size_t(c->next_scanline) * row_bytes);
        jpeg_write_scanlines(c, &row, 1);
    }
    jpeg_finish_compress(c);
    return true;
}

// Empty where libjpeg-turbo refuses (arithmetic coding left out of a build, say).
std::vector<std::uint8_t> libjpeg_file(const std::uint8_t* pixels, int w, int h, int components, const Encoding& e) {
    jpeg_compress_struct c{};
    LibjpegError error{};
    jpeg_scan_info scans[MAX_COMPONENTS]{};
    unsigned char* out = nullptr;
    unsigned long size = 0;
    const bool done = compress(&c, &error, pixels, w, h, components, &e, scans, &out, &size);
    jpeg_destroy_compress(&c);
    std::vector<std::uint8_t> file;
    if (done && out) file.assign(out, out + size);
    std::free(out);
    return file;
}

std::vector<std::uint8_t> libjpeg_file(const Image& img, const Encoding& e) {
    std::vector<std::uint8_t> packed;  // libjpeg wants rows of exactly width * components bytes
    for (int y = 0; y < img.height(); ++y)
        packed.insert(packed.end(), img.row<std::uint8_t>(y), img.row<std::uint8_t>(y) + img.shape().row_bytes());
    return libjpeg_file(packed.data(), img.width(), img.height(), img.channels(), e);
}

// ---- the GPU side ------------------------------------------------------------------------------------------

// Makes `device` current for the object's life.
struct OnDevice {
    int previous = 0;
    explicit OnDevice(int device) {
        cudaGetDevice(&previous);
        EXPECT_EQ(cudaSetDevice(device), cudaSuccess);
    }
    ~OnDevice() { cudaSetDevice(previous); }
};

// Device memory for an image of `shape` at `pitch` bytes a row, on the current device, every byte first
// set to `fill`, so that what a decode leaves alone (a row's padding) can be checked.
class DeviceImage {
public:
    static constexpr std::uint8_t fill = 0xA5;
    DeviceImage(const ImageShape& shape, std::size_t pitch) : shape_(shape), pitch_(pitch) {
        EXPECT_EQ(cudaMalloc(&data_, pitch_ * std::size_t(shape_.height)), cudaSuccess);
        EXPECT_EQ(cudaMemset(data_, fill, pitch_ * std::size_t(shape_.height)), cudaSuccess);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the decode runs on a non-blocking stream
    }
    ~DeviceImage() { cudaFree(data_); }
    DeviceImage(const DeviceImage&) = delete;
    DeviceImage& operator=(const DeviceImage&) = delete;

    ImageView view() { return ImageView{static_cast<std::byte*>(data_), shape_, pitch_, Memory::device}; }
    // The whole rows, padding included.
    std::vector<std::uint8_t> bytes() const {
        std::vector<std::uint8_t> out(pitch_ * std::size_t(shape_.height));
        EXPECT_EQ(cudaMemcpy(out.data(), data_, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        return out;
    }
    Image to_host() const {
        Image out(shape_);
        const std::vector<std::uint8_t> all = bytes();
        for (int y = 0; y < shape_.height; ++y)
            std::memcpy(out.view().row_bytes(y), all.data() + std::size_t(y) * pitch_, shape_.row_bytes());
        return out;
    }

private:
    ImageShape shape_;
    std::size_t pitch_;
    void* data_ = nullptr;
};

struct Stream {
    cudaStream_t stream = nullptr;
    Stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess); }
    ~Stream() { cudaStreamDestroy(stream); }
};

// The decoders of `device`: the GPU backend, and the hardware one where the device has it.
std::vector<std::unique_ptr<GpuJpegDecoder>> decoders_of(int device) {
    std::vector<std::unique_ptr<GpuJpegDecoder>> out;  // (a handle costs: made once per test)
    out.push_back(std::make_unique<GpuJpegDecoder>(device, GpuJpegBackend::gpu));
    try {
        out.push_back(std::make_unique<GpuJpegDecoder>(device, GpuJpegBackend::hardware));
    } catch (const Error& e) {
        std::printf("[ gpu jpeg ] device %d, no hardware backend: %s\n", device, e.what());
    }
    return out;
}

// probe(), then decode() on `device` into an image `extra_pitch` bytes wider a row than its samples, and back.
std::optional<Image> gpu_decode(GpuJpegDecoder& decoder, int device, const std::vector<std::uint8_t>& file,
                                const std::string& name, std::size_t extra_pitch = 0) {
    const std::optional<ImageShape> shape = decoder.probe(file, name);
    if (!shape) return std::nullopt;
    OnDevice on(device);
    DeviceImage out(*shape, shape->row_bytes() + extra_pitch);
    Stream stream;
    decoder.decode(file, name, out.view(), stream.stream);
    EXPECT_EQ(cudaStreamSynchronize(stream.stream), cudaSuccess);
    return out.to_host();
}

struct Difference {
    int largest = 0;
    double mean = 0;
};

Difference difference(const Image& a, const Image& b) {
    Difference d;
    double sum = 0;
    for (int y = 0; y < a.height(); ++y)
        for (std::size_t k = 0; k < a.shape().row_bytes(); ++k) {
            const int diff = std::abs(int(a.row<std::uint8_t>(y)[k]) - int(b.row<std::uint8_t>(y)[k]));
            d.largest = std::max(d.largest, diff);
            sum += diff;
        }
    d.mean = sum / double(a.shape().pixels() * std::uint64_t(a.channels()));
    return d;
}

// The GPU's image against libjpeg-turbo's, within the bound of its channel count; prints what it measured.
void expect_close_to_cpu(const Image& gpu, const std::vector<std::uint8_t>& file, const std::string& what) {
    const Image cpu = decode_image(file, what);
    ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
    const Difference d = difference(gpu, cpu);
    const Bound bound = cpu.channels() == 1 ? gray_bound : colour_bound;
    std::printf("[ gpu jpeg ] %-58s largest |diff| %d, mean %.4f\n", what.c_str(), d.largest, d.mean);
    EXPECT_LE(d.largest, bound.largest) << what;
    if (cpu.shape().pixels() * std::uint64_t(cpu.channels()) >= mean_needs) {
        EXPECT_LT(d.mean, bound.mean) << what;
    }
}

using Decoders = std::vector<std::unique_ptr<GpuJpegDecoder>>;

// Decodes `file` with each decoder (of device 0) and compares with the CPU. `must_take`: probe may not refuse
// it, but that the hardware decoder may leave pictures under 64x64 to the CPU (nvJPEG documents no minimum
// size for its engines, and the CPU is a fallback, not a failure).
void check_against_cpu(const Decoders& decoders, const std::vector<std::uint8_t>& file, const std::string& what,
                       bool must_take = true) {
    ASSERT_FALSE(file.empty()) << what;
    const ImageShape shape = probe_image(file, what);
    for (const auto& decoder : decoders) {
        const std::string name = what + " (" + decoder->backend() + ")";
        const std::optional<Image> gpu = gpu_decode(*decoder, 0, file, name);
        if (!gpu) {
            const bool small = shape.width < 64 || shape.height < 64;
            EXPECT_FALSE(must_take && !(small && decoder->backend() == "nvJPEG hardware"))
                << name << ": probe refused the file";
            std::printf("[ gpu jpeg ] %-58s left to the CPU\n", name.c_str());
            continue;
        }
        expect_close_to_cpu(*gpu, file, name);
        EXPECT_EQ(decoder->probe(file, name), shape) << name << ": the CPU reads another shape";
    }
}

std::string size_name(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

// The error of `call`, or "" when it did not throw an apron::Error (any other exception fails the test).
template <class Call>
std::string error_of(Call&& call) {
    try {
        call();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(GpuJpeg, StubSaysNvjpegIsNotInThisBuild) {
    if (cuda::gpu_jpeg_built()) GTEST_SKIP() << "nvJPEG is in this build";
    const std::string error = error_of([] { GpuJpegDecoder decoder(0); });
    EXPECT_NE(error.find("nvJPEG is not in this build"), std::string::npos) << error;
}

TEST(GpuJpeg, ApronEncodedGrayAndColourMatchTheCpuDecoder) {
    REQUIRE_NVJPEG();
    const auto decoders = decoders_of(0);
    std::uint32_t seed = 1;
    for (const auto& s : sizes)
        for (const int channels : {1, 3})
            for (const int quality : {95, 75}) {
                const Image img = smooth_image(s[0], s[1], channels, seed++);
                check_against_cpu(decoders, apron_jpeg(img, quality),
                                  std::string(channels == 1 ? "gray " : "RGB 4:2:0 ") + size_name(s[0], s[1]) + " q" +
                                      std::to_string(quality));
            }
}

TEST(GpuJpeg, EveryChromaSamplingMatchesTheCpuDecoder) {
    REQUIRE_NVJPEG();
    const struct {
        int h, v;
        const char* name;
    } samplings[] = {{1, 1, "4:4:4"}, {2, 1, "4:2:2"}, {2, 2, "4:2:0"}, {1, 2, "4:4:0"}};
    const auto decoders = decoders_of(0);
    std::uint32_t seed = 100;
    for (const auto& s : sizes)
        for (const auto& sampling : samplings) {
            Encoding e;
            e.luma_h = sampling.h;
            e.luma_v = sampling.v;
            const Image img = smooth_image(s[0], s[1], 3, seed++);
            check_against_cpu(decoders, libjpeg_file(img, e),
                              std::string("RGB ") + sampling.name + " " + size_name(s[0], s[1]));
        }
    // Restart markers every row of MCUs, as cameras write them; and a libjpeg-turbo gray file.
    Encoding restarts;
    restarts.restart_rows = 1;
    check_against_cpu(decoders, libjpeg_file(smooth_image(641, 479, 3, seed++), restarts),
                      "RGB 4:2:0 641x479 with RSTn");
    Encoding gray;
    gray.in = JCS_GRAYSCALE;
    check_against_cpu(decoders, libjpeg_file(smooth_image(641, 479, 1, seed++), gray), "gray 641x479 (libjpeg-turbo)");
}

// Files a backend may take or leave: whatever probe() says must hold (a taken file decodes as the CPU does).
TEST(GpuJpeg, ProgressiveAndMultiScanFilesDecodeOrFallBack) {
    REQUIRE_NVJPEG();
    const Image img = smooth_image(641, 479, 3, 200);
    Encoding progressive;
    progressive.progressive = true;
    const auto decoders = decoders_of(0);
    check_against_cpu(decoders, libjpeg_file(img, progressive), "RGB 4:2:0 641x479 progressive", false);
    Encoding separate;
    separate.scan_per_component = true;
    check_against_cpu(decoders, libjpeg_file(img, separate), "RGB 4:2:0 641x479 one scan per component", false);
}

TEST(GpuJpeg, ProbeLeavesWhatItDoesNotTakeToTheCpu) {
    REQUIRE_NVJPEG();
    const Image rgb = smooth_image(64, 48, 3, 300);
    std::vector<std::uint8_t> cmyk_pixels, two_pixels, five_pixels;
    for (int i = 0; i < 64 * 48; ++i) {
        for (int c = 0; c < 4; ++c) cmyk_pixels.push_back(std::uint8_t(i * (c + 1)));
        for (int c = 0; c < 2; ++c) two_pixels.push_back(std::uint8_t(i * (c + 3)));
        for (int c = 0; c < 5; ++c) five_pixels.push_back(std::uint8_t(i + 40 * c));
    }
    Encoding cmyk, unknown, five, rgb_stored, arithmetic, sampling_411;
    cmyk.in = JCS_CMYK;
    unknown.in = five.in = JCS_UNKNOWN;
    five.scan_per_component = true;  // a scan holds 4 components at most
    rgb_stored.stored = JCS_RGB;  // an Adobe marker with transform 0: libjpeg-turbo reads RGB, not YCbCr
    arithmetic.arithmetic = true;
    sampling_411.luma_h = 4;
    sampling_411.luma_v = 1;
    // A gray file whose frame header says 12 bits a sample (and extended sequential, as 12 bits needs).
    std::vector<std::uint8_t> twelve_bit = apron_jpeg(smooth_image(64, 48, 1, 301), 90);
    for (std::size_t i = 2; i + 4 < twelve_bit.size(); ++i)
        if (twelve_bit[i] == 0xFF && twelve_bit[i + 1] == 0xC0) {
            twelve_bit[i + 1] = 0xC1;
            twelve_bit[i + 4] = 12;
            break;
        }
    const struct {
        std::vector<std::uint8_t> file;
        const char* what;
    } refused[] = {
        {libjpeg_file(cmyk_pixels.data(), 64, 48, 4, cmyk), "CMYK"},
        {libjpeg_file(two_pixels.data(), 64, 48, 2, unknown), "2 components"},
        {libjpeg_file(five_pixels.data(), 64, 48, 5, five), "5 components"},
        {libjpeg_file(rgb, rgb_stored), "RGB components (Adobe transform 0)"},
        {libjpeg_file(rgb, arithmetic), "arithmetic-coded"},
        {libjpeg_file(rgb, sampling_411), "4:1:1"},
        {twelve_bit, "12-bit frame header"},
    };
    for (const auto& decoder : decoders_of(0))
        for (const auto& r : refused) {
            if (r.file.empty()) {
                std::printf("[ gpu jpeg ] %s: libjpeg-turbo cannot write it here, not tested\n", r.what);
                continue;
            }
            EXPECT_FALSE(decoder->probe(r.file, r.what)) << r.what << " (" << decoder->backend() << ")";
        }
    // The CPU still reads what it reads: the fallback is not a loss.
    EXPECT_EQ(decode_image(libjpeg_file(rgb, rgb_stored), "rgb.jpg").channels(), 3);
    EXPECT_EQ(decode_image(libjpeg_file(rgb, sampling_411), "411.jpg").channels(), 3);
}

TEST(GpuJpeg, RepeatedDecodesAreBitIdentical) {
    REQUIRE_NVJPEG();
    const std::vector<std::uint8_t> colour = apron_jpeg(smooth_image(641, 479, 3, 400), 90);
    const std::vector<std::uint8_t> gray = apron_jpeg(smooth_image(333, 211, 1, 401), 90);
    for (const auto& decoder : decoders_of(0)) {
        const std::optional<Image> first = gpu_decode(*decoder, 0, colour, "colour.jpg");
        ASSERT_TRUE(first) << decoder->backend();
        for (int round = 0; round < 3; ++round) {
            // Gray in between: the other batched decoder runs, then the RGB one again, at another pitch.
            ASSERT_TRUE(gpu_decode(*decoder, 0, gray, "gray.jpg"));
            const std::optional<Image> again = gpu_decode(*decoder, 0, colour, "colour.jpg", std::size_t(round) * 64);
            ASSERT_TRUE(again);
            EXPECT_TRUE(test::identical(*first, *again)) << decoder->backend() << ", round " << round;
        }
    }
}

TEST(GpuJpeg, EveryDeviceGivesDeviceZerosBits) {
    REQUIRE_NVJPEG();
    int devices = 0;
    ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
    std::vector<std::vector<std::uint8_t>> files;
    for (int i = 0; i < 3; ++i)
        files.push_back(
            apron_jpeg(smooth_image(sizes[i][0], sizes[i][1], 1 + 2 * (i % 2), 500 + std::uint32_t(i)), 90));
    files.push_back(apron_jpeg(smooth_image(641, 479, 3, 510), 95));
    for (const GpuJpegBackend kind : {GpuJpegBackend::gpu, GpuJpegBackend::hardware}) {
        std::unique_ptr<GpuJpegDecoder> reference;
        try {
            reference = std::make_unique<GpuJpegDecoder>(0, kind);
        } catch (const Error&) {
            continue;  // device 0 has no hardware decoder
        }
        // (The hardware decoder may leave the small pictures to the CPU: then on every device.)
        std::vector<std::optional<Image>> expected;
        for (const auto& file : files) expected.push_back(gpu_decode(*reference, 0, file, "file.jpg"));
        ASSERT_TRUE(expected.back()) << reference->backend();
        for (int device = 1; device < devices; ++device) {
            std::unique_ptr<GpuJpegDecoder> decoder;
            try {
                decoder = std::make_unique<GpuJpegDecoder>(device, kind);
            } catch (const Error& e) {
                ADD_FAILURE() << "device " << device << " lacks device 0's " << reference->backend() << ": "
                              << e.what();
                continue;
            }
            for (std::size_t i = 0; i < files.size(); ++i) {
                const std::optional<Image> got = gpu_decode(*decoder, device, files[i], "file.jpg");
                const std::string where = decoder->backend() + ", device " + std::to_string(device) + ", file " +
                                          std::to_string(i);
                ASSERT_EQ(bool(got), bool(expected[i])) << where;
                if (got) {
                    EXPECT_TRUE(test::identical(*expected[i], *got)) << where;
                }
            }
        }
    }
}

TEST(GpuJpeg, DecodesAtAnyPitchAndLeavesThePaddingAlone) {
    REQUIRE_NVJPEG();
    for (const int channels : {1, 3}) {
        const std::vector<std::uint8_t> file =
            apron_jpeg(smooth_image(641, 479, channels, 600 + std::uint32_t(channels)), 90);
        for (const auto& decoder : decoders_of(0)) {
            const std::optional<ImageShape> shape = decoder->probe(file, "pitch.jpg");
            ASSERT_TRUE(shape);
            const std::optional<Image> tight = gpu_decode(*decoder, 0, file, "pitch.jpg");
            for (const std::size_t extra : {std::size_t(7), std::size_t(512 - shape->row_bytes() % 512)}) {
                DeviceImage out(*shape, shape->row_bytes() + extra);
                Stream stream;
                decoder->decode(file, "pitch.jpg", out.view(), stream.stream);
                ASSERT_EQ(cudaStreamSynchronize(stream.stream), cudaSuccess);
                EXPECT_TRUE(test::identical(*tight, out.to_host())) << decoder->backend() << ", pitch +" << extra;
                const std::vector<std::uint8_t> all = out.bytes();
                std::size_t touched = 0;
                for (int y = 0; y < shape->height; ++y)
                    for (std::size_t k = shape->row_bytes(); k < shape->row_bytes() + extra; ++k)
                        touched += all[std::size_t(y) * (shape->row_bytes() + extra) + k] != DeviceImage::fill;
                EXPECT_EQ(touched, 0u) << decoder->backend() << ": padding bytes written, pitch +" << extra;
            }
        }
    }
}

// The caller turns the image (as after a CPU decode): the GPU gives the pixels as stored.
TEST(GpuJpeg, LeavesTheExifOrientationToTheCaller) {
    REQUIRE_NVJPEG();
    const std::vector<std::uint8_t> file = apron_jpeg(smooth_image(160, 96, 3, 700), 90, 6);
    ASSERT_EQ(read_metadata(file, "turned.jpg").orientation, 6);
    for (const auto& decoder : decoders_of(0)) {
        const std::optional<Image> gpu = gpu_decode(*decoder, 0, file, "turned.jpg");
        ASSERT_TRUE(gpu) << decoder->backend();
        EXPECT_EQ(gpu->width(), 160);
        EXPECT_EQ(gpu->height(), 96);
        expect_close_to_cpu(*gpu, file, "RGB 160x96 Exif orientation 6 (" + decoder->backend() + ")");
    }
}

TEST(GpuJpeg, DamagedFilesAreOneLineErrorsAndTheDecoderGoesOn) {
    REQUIRE_NVJPEG();
    const std::vector<std::uint8_t> good = apron_jpeg(smooth_image(641, 479, 3, 800), 90);
    std::vector<std::vector<std::uint8_t>> damaged;
    for (const std::size_t keep : {std::size_t(3), std::size_t(20), std::size_t(200), good.size() / 2, good.size() - 2})
        damaged.emplace_back(good.begin(), good.begin() + std::ptrdiff_t(keep));  // truncated
    std::mt19937 rng(801);
    std::vector<std::uint8_t> noise(5000);
    for (auto& b : noise) b = std::uint8_t(rng());
    damaged.push_back(noise);
    std::vector<std::uint8_t> marker = good;  // a frame marker inside the image data
    marker[good.size() / 2] = 0xFF;
    marker[good.size() / 2 + 1] = 0xC0;
    damaged.push_back(marker);
    std::vector<std::uint8_t> bad_length = good;  // the first segment (APP0) says it is 1 byte long
    bad_length[4] = 0x00;
    bad_length[5] = 0x01;
    damaged.push_back(bad_length);

    for (const auto& decoder : decoders_of(0)) {
        const std::optional<Image> reference = gpu_decode(*decoder, 0, good, "good.jpg");
        ASSERT_TRUE(reference);
        for (std::size_t i = 0; i < damaged.size(); ++i) {
            const std::string name = "damaged" + std::to_string(i) + ".jpg";
            // decode() without a probe's say-so: it must refuse by itself, naming the file.
            DeviceImage out(reference->shape(), reference->shape().row_bytes());
            Stream stream;
            const std::string error = error_of([&] { decoder->decode(damaged[i], name, out.view(), stream.stream); });
            cudaStreamSynchronize(stream.stream);
            EXPECT_NE(error.find(name), std::string::npos) << decoder->backend() << ": " << error;
            EXPECT_EQ(error.find('\n'), std::string::npos) << error;
            std::printf("[ gpu jpeg ] %s: %s\n", decoder->backend().c_str(), error.c_str());
            // And the decoder still decodes a good file, with the same bits.
            const std::optional<Image> after = gpu_decode(*decoder, 0, good, "good.jpg");
            ASSERT_TRUE(after);
            EXPECT_TRUE(test::identical(*reference, *after)) << decoder->backend() << " after " << name;
        }
        // Where the header is damaged probe() leaves the file to the CPU, which gives its own error.
        EXPECT_FALSE(decoder->probe(damaged[0], "cut.jpg"));
        EXPECT_FALSE(decoder->probe(noise, "noise.jpg"));
        EXPECT_FALSE(decoder->probe(bad_length, "length.jpg"));
    }
}

// Bits flipped inside the entropy-coded data keep the structure: nvJPEG may decode a damaged picture or
// report it, but must neither crash nor leave the decoder unusable.
TEST(GpuJpeg, FlippedBitsNeverCrash) {
    REQUIRE_NVJPEG();
    const std::vector<std::uint8_t> good = apron_jpeg(smooth_image(320, 240, 3, 900), 90);
    std::mt19937 rng(901);
    for (const auto& decoder : decoders_of(0)) {
        const std::optional<Image> reference = gpu_decode(*decoder, 0, good, "good.jpg");
        ASSERT_TRUE(reference);
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<std::uint8_t> file = good;
            for (int flip = 0; flip < 4; ++flip) {
                const std::size_t at = good.size() / 3 + rng() % (good.size() / 2);
                const std::uint8_t flipped = std::uint8_t(file[at] ^ (1u << (rng() % 8)));
                if (file[at] != 0xFF && flipped != 0xFF && file[at - 1] != 0xFF) file[at] = flipped;
            }
            DeviceImage out(reference->shape(), reference->shape().row_bytes());
            Stream stream;
            error_of([&] { decoder->decode(file, "flipped.jpg", out.view(), stream.stream); });
            cudaStreamSynchronize(stream.stream);
        }
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
        const std::optional<Image> after = gpu_decode(*decoder, 0, good, "good.jpg");
        ASSERT_TRUE(after);
        EXPECT_TRUE(test::identical(*reference, *after)) << decoder->backend();
    }
}

TEST(GpuJpeg, RefusesAnOutputOfAnotherShape) {
    REQUIRE_NVJPEG();
    const std::vector<std::uint8_t> file = apron_jpeg(smooth_image(64, 48, 3, 1000), 90);
    GpuJpegDecoder decoder(0);
    DeviceImage wrong(ImageShape{48, 64, 3, PixelType::u8}, 48 * 3);
    Stream stream;
    const std::string error = error_of([&] { decoder.decode(file, "shape.jpg", wrong.view(), stream.stream); });
    EXPECT_NE(error.find("shape.jpg"), std::string::npos) << error;
}

// nvJPEG's docs list the hardware decoder on A100/A30, Hopper, Ada and Blackwell: on the lent H100/H200
// the automatic choice must be it.
TEST(GpuJpeg, AutomaticChoiceTakesTheHardwareDecoderOnHopper) {
    REQUIRE_NVJPEG();
    cudaDeviceProp properties{};
    ASSERT_EQ(cudaGetDeviceProperties(&properties, 0), cudaSuccess);
    const GpuJpegDecoder decoder(0);
    std::printf("[ gpu jpeg ] %s: %s\n", properties.name, decoder.backend().c_str());
    const std::string name = properties.name;
    if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) {
        EXPECT_EQ(decoder.backend(), "nvJPEG hardware");
    } else {
        EXPECT_TRUE(decoder.backend() == "nvJPEG hardware" || decoder.backend() == "nvJPEG GPU") << decoder.backend();
    }
}

TEST(GpuJpeg, RestoresTheCallersDevice) {
    REQUIRE_NVJPEG();
    int devices = 0, current = -1;
    ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
    OnDevice on(devices - 1);
    const std::vector<std::uint8_t> file = apron_jpeg(smooth_image(128, 96, 1, 1100), 90);
    GpuJpegDecoder decoder(0);
    ASSERT_TRUE(decoder.probe(file, "device.jpg"));
    cudaGetDevice(&current);
    EXPECT_EQ(current, devices - 1);
}

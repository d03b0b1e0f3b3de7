#pragma once
// JPEG decoding on the GPU with nvJPEG, for `apron batch`: the file's bytes in host memory, the pixels into a
// device view, in order on the caller's stream. The CPU decoder (libjpeg-turbo, src/io/jpeg.cpp) stays the
// reference and the fallback: probe() says which files this decoder takes, the caller decodes the others.
//
// Backend. The constructor asks nvJPEG for the hardware decoder (NVJPEG_BACKEND_HARDWARE: the NVJPG engines
// of A100/A30, Hopper (H100/H200: 7 engines), some Ada and Blackwell parts) and keeps it when
// nvjpegGetHardwareDecoderInfo counts at least one engine: backend() "nvJPEG hardware". Elsewhere it takes
// NVJPEG_BACKEND_GPU_HYBRID: backend() "nvJPEG GPU". Both decode through the batched API with a batch of one
// (nvjpegDecodeBatchedInitialize, nvjpegDecodeBatched). On the GPU backend a batch that small has its
// Huffman decoding done on the calling CPU thread (nvJPEG moves it to the GPU only for batches over 50);
// the IDCT, upsampling and colour conversion run on the GPU. The hardware handle is made with
// NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE, so that nvJPEG holds no image back for a later call: each call's
// image is complete once the stream passes it. A device's decoders share one handle per backend (nvJPEG's
// handle is thread-safe; the hardware decoder's resources are the device's): the first decoder makes it,
// the last one's destruction releases it.
//
// Same pixels as the CPU path, within a bound. Output is u8, interleaved RGB (NVJPEG_OUTPUT_RGBI, JFIF's
// full-range BT.601 YCbCr -> RGB, libjpeg-turbo's JCS_RGB order) for colour files and the Y plane
// (NVJPEG_OUTPUT_Y) for gray ones, written straight into the caller's view at its pitch. Both handles are made
// with NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION (nvJPEG 12.1 and later): subsampled chroma is interpolated
// between sample centres as libjpeg-turbo's default "fancy" upsampling does, not replicated. Entropy
// decoding is exact on both paths, so the results differ only by rounding: the IDCT (libjpeg-turbo's
// accurate integer JDCT_ISLOW against nvJPEG's), the chroma interpolation's rounding biases and the colour
// conversion's fixed-point tables. The bounds tests/gpu_test_jpeg.cpp holds come from that error budget (it
// prints what each GPU measures, to tighten them by): gray samples within 2 (two IDCTs, each within 1 of the
// exact one) and a mean |difference| under 0.25; colour samples within 4 (a Y difference of 1 plus a chroma
// difference of 1 times the conversion's largest coefficient, 1.772 for B, plus a rounding of 0.5 on each
// path) and a mean under 0.5. It also holds a decode bit-identical when repeated and on every device of
// one kind.
//
// What probe() refuses (nullopt: the caller decodes on the CPU, which also gives the canonical error for a
// damaged file): a header that fails decode()'s walk (below) up to the first scan; frames other than
// Huffman-coded baseline, extended sequential or progressive DCT (lossless, hierarchical and
// arithmetic-coded files); a sample precision other than 8 (12-bit files); other than 1 or 3 components
// (CMYK/YCCK and 2- or 5-component files; the CPU refuses those with its own message); 3 components that
// libjpeg-turbo reads as RGB rather than YCbCr (an Adobe marker with transform 0, or component ids 'R','G','B'
// without a JFIF marker), whose colour nvJPEG would convert as YCbCr; sampling other than 4:4:4, 4:2:2,
// 4:2:0 and 4:4:0 (libjpeg-turbo replicates chroma for 4:1:1 where nvJPEG would interpolate), and gray files
// with sampling factors other than 1x1; a frame nvJPEG reads otherwise; and whatever
// nvjpegDecodeBatchedSupported turns down: on the hardware backend, per nvJPEG's docs, all but baseline
// files with a single scan (progressive files, scans of one component each). probe() reads the header only
// and applies no size limit: the caller checks the shape against its own (max_pixels, memory budget).
//
// Damaged data. decode() walks the whole file on the CPU before nvJPEG sees a byte (gpu_jpeg_markers.cpp,
// libjpeg-turbo's checks: segment lengths inside the file, well-formed quantisation and Huffman tables,
// scan headers that name the frame's components and defined tables, a valid progression, no marker inside
// entropy-coded data but stuffing and RSTn, an EOI, after which bytes are ignored as libjpeg-turbo ignores
// them). Truncation and broken structure are so a one-line apron::Error naming the file, as on the CPU
// path, never a crash: nvJPEG 13.0 made its decoder robust against malformed and truncated bitstreams, yet
// 13.4 Update 1 still fixed crashes and hangs in its parser, so only walked files reach it. A fuzz of the
// walk against libjpeg-turbo (mutated files) found no file the CPU decodes that decode() refuses. What only
// decoding finds (a bad Huffman code, a scan's data ending early, RSTn out of order) libjpeg-turbo reports
// and the CPU path makes fatal; nvJPEG reports it as BAD_JPEG/INCOMPLETE_BITSTREAM where it notices (the
// same kind of error), else decodes a damaged picture. nvJPEG is not made strict with
// NVJPEG_FLAGS_BITSTREAM_STRICT, which would also fail files libjpeg-turbo reads with a harmless warning.
//
// Not applied: the Exif orientation (nvjpegDecodeBatched without decode parameters never turns the image;
// the caller turns it, as on the CPU path), colour profiles.
//
// Ordering. decode() returns once the work is queued; before queueing, it waits on the host for this
// decoder's previous decode to finish on the GPU (an event, not the whole stream): nvJPEG reuses its
// buffers, its pinned staging memory among them, and must not initialise a batched decoder while a batch
// runs. One batched decoder per output format (gray, RGB), each initialised once.
//
// CUDA 13: the calls used here are all in nvJPEG 12.1 and later and none is deprecated; CUDA 13.0 removed
// only nvjpegEncoderParamsCopyHuffmanTables (an encoder call), and nvjpegCreate (deprecated) is not used.
//
// Threads: one decoder per batch compute slot; a decoder is not thread-safe (its nvJPEG states and stream
// parser are its own); several decoders may work on one device at once (the handle they share is
// thread-safe, and is made and released under a lock).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "apron/image.hpp"  // ImageShape, ImageView, PixelType

namespace apron::cuda {

// True when this build has nvJPEG (APRON_HAVE_NVJPEG).
bool gpu_jpeg_built();

// Which nvJPEG backend a decoder uses. `automatic`: the hardware decoder where the device has one, else the
// GPU backend. `hardware` and `gpu` insist (tests, measurements): the constructor throws where the one
// asked for cannot start.
enum class GpuJpegBackend : unsigned char { automatic, hardware, gpu };

class GpuJpegDecoder {
public:
    // On CUDA device `device` (creates nvJPEG handle/state there; the caller's current device is restored).
    // Throws apron::Error when nvJPEG is absent or cannot start.
    explicit GpuJpegDecoder(int device);
    GpuJpegDecoder(int device, GpuJpegBackend backend);
    ~GpuJpegDecoder();
    GpuJpegDecoder(const GpuJpegDecoder&) = delete;
    GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

    // "nvJPEG hardware" or "nvJPEG GPU" (which backend this decoder uses), for the batch summary.
    std::string backend() const;
    // The decoded shape (u8, 1 channel for gray, 3 for colour YCbCr->RGB) of a JPEG file's bytes, or nullopt
    // when this decoder does not take it (the caller then decodes on the CPU). `name` names the file in errors.
    std::optional<ImageShape> probe(std::span<const std::uint8_t> file, const std::string& name);
    // Decodes into `out` (device memory on this decoder's device, shape as probe() said, any pitch) in order on
    // `stream` (a cudaStream_t passed as void*). `file` must stay valid until the stream has passed this
    // point (the caller keeps it). Throws apron::Error naming `name` on corrupt data.
    void decode(std::span<const std::uint8_t> file, const std::string& name, ImageView out, void* stream);

private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace apron::cuda

#pragma once
// Batches: many images through one pipeline, every stage overlapping (`apron batch`).
//
//   I/O threads    decode files straight into page-locked buffers, in the order of the work feed; and
//                  crop the job file's padding, encode, write atomically, record in the manifest (one pool
//                  does both, writing first, so the cores go to whichever is behind)
//   compute slots  per GPU, several slots, each with its own CUDA stream: upload, pipeline, download;
//                  without a GPU, one slot on the CPU backend (all cores)
//
// Buffers are sized from each image (no compile-time maximum); the images in flight are bounded in number
// and by the memory budget. A corrupt or unreadable input, or a failing image, is reported and skipped; the
// rest finishes. One run at a time writes an output directory (its lock, OUTPUT_DIR/.apron-batch/lock).
//
//   apron::BatchOptions o;
//   o.pipeline = apron::Pipeline({"dilate:se=box:5x5"});
//   o.output_dir = "out";
//   apron::BatchReport r = apron::run_batch({{"a.pgm", "out/a.pgm"}, {"b.pgm", "out/b.pgm"}}, o);
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apron/image.hpp"
#include "apron/io.hpp"
#include "apron/pipeline.hpp"

namespace apron {

struct BatchItem {
    std::string input;   // path (or a name, with a custom source)
    std::string output;  // path (or a name, with a custom sink)
    int pad_x = 0, pad_y = 0;  // the output is the interior: pad_x columns and pad_y rows off each side
};

struct BatchOptions {
    Pipeline pipeline;
    RunOptions run;             // backend, CPU threads, out_type, algorithm (cuda_stream is ignored)
    std::vector<int> devices;   // CUDA devices to use; empty: all of them (backend auto or cuda)
    int streams_per_device = 4; // compute slots per GPU, each with its own stream (H100: 4 reach 81 % of PCIe)
    int io_threads = 0;         // threads decoding and encoding; 0: one per core
    WriteOptions write;         // its metadata is ignored: each output takes its input's (keep_metadata)
    ReadOptions read;
    // Carry each input's colour profile and Exif block to its output (read_metadata), where the output
    // format has a place for them.
    bool keep_metadata = true;
    // Turn each image upright by its Exif orientation before filtering (apply_orientation); its output is
    // then marked upright.
    bool auto_orient = false;
    // Who decodes JPEG inputs of a GPU batch: nvJPEG on the GPU each image goes to (the hardware decoder on
    // H100/H200, src/cuda/gpu_jpeg.hpp), or libjpeg-turbo on the CPU. Their pixels differ by rounding (the
    // IDCT, chroma upsampling, colour conversion: within 2 levels on gray, 4 on colour; docs/batch.md), so
    // the choice is part of a job's identity for --resume. `automatic`: nvJPEG where the build has it and the
    // batch runs on GPUs; `gpu` insists (an error where it cannot); `cpu` never. Files nvJPEG does not take
    // (12-bit, CMYK, lossless, progressive on the hardware decoder, ...) and images turned upright by
    // auto_orient are decoded on the CPU whatever this says.
    enum class JpegDecoder { automatic, cpu, gpu };
    JpegDecoder jpeg_decoder = JpegDecoder::automatic;
    // Checks of the job file: the largest size, and the bits per sample (0: any).
    int max_width = 0, max_height = 0, bits = 0;

    // Host memory for the images in flight: each image's file, decoded pixels, result and the result's
    // encoding are counted before they are allocated (sizes from the file's header), and an image waits
    // until it fits beside the others. One that alone does not fit is streamed in bands (apron/stream.hpp,
    // as `apron filter` streams it) with the whole budget after the others are done, where its file alone
    // names its output (no job file padding, no source or sink callbacks); otherwise it fails alone, like a
    // corrupt file.
    // 0: default_memory_budget() (apron/memory.hpp). It is also read.memory_budget and run.memory_budget
    // where those are 0.
    std::uint64_t memory_budget = 0;

    // Resume: with a manifest directory, finished outputs are recorded there (OUTPUT_DIR/.apron-batch/);
    // with `resume`, outputs recorded by an earlier run of the same job, with the output and the input it
    // was made from both unchanged, are skipped (batch/manifest.hpp says exactly what is checked).
    std::string output_dir;     // empty: no manifest (and no lock)
    std::string fingerprint;    // what the outputs depend on (the CLI's pipeline and options)
    bool resume = false;
    int rank = 0;               // this process's MPI rank (its manifest file)
    std::function<void()> manifest_loaded;  // MPI: a barrier between reading the manifests and rewriting
    // Take OUTPUT_DIR/.apron-batch/lock for the whole run, so that a second run on the directory fails at
    // once (apron::Error naming the lock file and the process holding it). Under MPI the caller takes it once,
    // on rank 0, before any rank reads a manifest (as `apron batch` does), and sets this false.
    bool lock_output = true;
    // Told what reading the manifests found worth saying (manifests of another version: not trusted).
    std::function<void(const std::string&)> notice;

    bool progress = false;      // draw the progress bar on stderr

    // The work feed: the index of the next item this process should do, nullopt when none is left
    // (thread-safe). Default: every item, in order. MPI runs hand out indices across ranks.
    std::function<std::optional<std::size_t>()> next;
    // Replace file reading and writing (benchmarks, bindings). source(i) returns item i's pixels, owned by
    // the caller and valid until the batch returns (pinned memory makes uploads asynchronous); sink(i, view)
    // takes the result (the view is valid during the call).
    std::function<ConstImageView(std::size_t)> source;
    std::function<void(std::size_t, ConstImageView)> sink;
};

struct BatchFailure {
    std::string input;
    std::string message;
};

struct BatchReport {
    std::size_t done = 0, skipped = 0, failed = 0;  // skipped: already finished (resume)
    std::vector<BatchFailure> failures;
    std::uint64_t pixels = 0;    // input pixels of the images done
    std::uint64_t bytes_in = 0, bytes_out = 0;  // decoded bytes through the pipeline
    double seconds = 0;          // the whole run, set-up included
    double setup_seconds = 0;    // devices, streams, the lock, reading the manifests: before the first image
    std::vector<std::pair<std::string, double>> stage_seconds;  // busy time per stage, summed over threads
    std::string summary;         // the per-stage table naming the bottleneck
    std::string workers;         // what ran: "2 GPUs x 3 streams, 16 I/O threads"
};

BatchReport run_batch(const std::vector<BatchItem>& items, const BatchOptions& options);

// What `--dry-run` reports: every input read as a real run reads it (the file, the job file's limits, the
// memory budget), on all cores, writing nothing. A real run fails exactly these inputs at reading.
struct BatchCheck {
    std::optional<std::size_t> first;    // the first input that reads, if any
    ImageShape first_shape;              // and its shape
    std::vector<BatchFailure> failures;  // in input order
    std::vector<std::string> streamed;   // inputs larger than the memory budget: streamed in bands, after the others
};
BatchCheck check_batch_inputs(const std::vector<BatchItem>& items, const BatchOptions& options);
// Whether run_batch decodes JPEG inputs on the GPU (BatchOptions::jpeg_decoder resolved); throws apron::Error
// naming --jpeg-decode where `gpu` is asked and cannot be had.
bool decodes_jpeg_on_gpu(const BatchOptions& options);
// Where run_batch would compute ("CPU backend", "2 GPUs x 4 streams"), with its checks of the backend,
// devices and streams (apron::Error naming the option): what `--dry-run` prints.
std::string describe_batch_compute(const BatchOptions& options);

} // namespace apron

#pragma once
// Images larger than memory: a pipeline run over bands of rows, each read with the halo the pipeline needs,
// filtered on the CPU or on every GPU, and written at its place, so host memory stays within the budget
// whatever the image size. The result is bit-identical to Pipeline::run on the whole image for every
// operation and border mode (wrap reads the far side), on the direct, separable and morphology paths and on
// exact FFT plans. Float plans on the FFT path are within SPEC.md's tolerance but not yet bit-identical:
// their overlap-save tiles are cut relative to the band, not to the whole image (docs/streaming.md).
//
//   apron::StreamOptions o;
//   o.run.memory_budget = 1ull << 30;
//   apron::StreamReport r = apron::stream_filter("slide.tif", "out.tif", apron::Pipeline({"gaussian:sigma=4"}), o);
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apron/io.hpp"
#include "apron/pipeline.hpp"

namespace apron {

// Several processes filtering one image together (`mpirun -np N apron filter`: the dist layer fills this
// in from MPI). Every process calls stream_filter with the same arguments: they agree on rank 0's band
// plan, rank 0 creates the output's partial file, each writes the bands it is handed at their offsets
// (random-access outputs only), each records them in a journal of its own, and rank 0 renames the file
// into place once every process is done. The output is the same bits as one process's.
struct StreamTeam {
    int rank = 0, size = 1;
    int cuda_device = -1;                        // the GPU this process uses (-1: every GPU of the machine)
    std::function<void()> barrier;               // returns once every process has called it
    std::function<int(int)> broadcast;           // rank 0's value, on every process (a collective call)
    // Hands out band indices 0..bands-1 across the processes (made once, collectively; next() from one
    // thread per process; nothing once every band is taken).
    std::function<std::function<std::optional<int>()>(int bands)> feed;
    // Ends every process at once after an error in this one (says it, then never returns): the others
    // would otherwise wait for this one's bands or at a barrier forever.
    std::function<void(const std::string& error)> abort;
};

struct StreamOptions {
    RunOptions run;                // backend, threads, out_type, algorithm, memory_budget (0: the default)
    int band_rows = 0;             // rows per band; 0: the largest the budget allows (rounded up to the tile side
                                   // for TIFF outputs, so every band but the last fills whole rows of tiles)
    int tile_side = 256;           // TIFF outputs: tiles of tile_side x tile_side (a multiple of 16)
    // TIFF outputs: "none" (tiles at fixed offsets: written in any order, resumable, shared by a team), or
    // "deflate", "zstd" or "lzw" where libtiff has the codec (written in order: not resumable, one process).
    // Any other output refuses all but "none".
    std::string compression = "none";
    bool resume = false;           // continue an interrupted run from its journal (random-access outputs)
    std::string raw;               // "WxHxC:type[:endianness]": the input is raw samples
    ByteOrder pnm_byte_order = ByteOrder::big;
    int io_threads = 0;            // threads reading or writing one band at once; 0: up to 8, one per core
    std::optional<StreamTeam> team;  // set: one of several processes on this image (see StreamTeam)
    std::vector<int> devices;        // CUDA devices to filter on; empty: every GPU of the machine (or the team's)
    // Written into a TIFF output's directory (every process of a team must pass the same) or a PNG's chunks,
    // as write_image writes them; PNM, PFM and raw outputs carry none. fit_metadata(..., streamed = true)
    // fits it and says what is left out.
    ImageMetadata metadata;
    // Called after every band written: rows done and the image's rows. May be empty.
    std::function<void(std::uint64_t rows_done, std::uint64_t rows)> progress;
};

struct StreamReport {
    int bands = 0, band_rows = 0, halo_rows = 0;  // the band plan
    int bands_resumed = 0;                        // bands found done in the journal
    std::uint64_t peak_buffer_bytes = 0;          // host bytes the engine held at most (bands, decoder, sink)
    double seconds = 0;
    // Busy time of each stage, summed over its threads: reading bands, filtering them (every worker), and
    // writing and syncing them. A stage near `seconds` is the bound.
    double read_seconds = 0, filter_seconds = 0, write_seconds = 0;
    std::string plan;                             // what --plan prints: backend, bands, halo, steps
    // What a resume set aside or recomputed and why ("--tile differs: 256 then 512; starting over"), also
    // printed on stderr as "apron: OUTPUT: NOTE".
    std::vector<std::string> notes;
};

// The band plan alone (what `apron filter --plan` prints for a streamed run), from the header.
std::string describe_stream(const std::string& input, const std::string& output, const Pipeline& pipeline,
                            const StreamOptions& options = {});

// Whether `apron filter` should stream: the whole-image run would not fit in the memory budget.
bool needs_streaming(const ImageShape& input, const Pipeline& pipeline, const RunOptions& options);

StreamReport stream_filter(const std::string& input, const std::string& output, const Pipeline& pipeline,
                           const StreamOptions& options = {});

} // namespace apron

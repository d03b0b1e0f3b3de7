#pragma once
// `apron filter --stream auto` streams an image that fits in memory too, where bands are faster than the
// whole-image run (tools/apron_main.cpp): a large binary PNM or PFM in and PNM or PFM out. The whole-image
// run reads the file into a fresh image (a page fault per 4 KiB of it), filters it into a second one (as
// many faults again), then writes it; bands of a few MiB reuse buffers that stay in the cache, and the
// reading of one band, the filtering of the next and the writing of a third overlap. On a 16384^2 u8 PGM
// (2 shared cores, tmpfs; gaussian sigma 2, box 5x5, dilate 9x9): 0.14-0.30 s in about 70 MiB, against
// 0.30-0.36 s in 522 MiB for the whole-image run reading and writing rows in place, and 0.62-0.93 s in
// 778 MiB before that (issue 30, item 5). The bytes written are the whole-image run's, the band engine being
// exact.
#include <cstdint>
#include <string>

#include "apron/stream.hpp"

namespace apron::stream {

// Images smaller than this run whole: their page faults cost little, and a band plan's threads more.
inline constexpr std::uint64_t stream_above_bytes = std::uint64_t(32) << 20;

struct FasterStreamed {
    int band_rows = 0;  // 0: run it whole; else bands of this many rows (options.band_rows where given)
    std::string why;    // what --plan prints first: "streamed: ..."
};

// Whether streaming `input` into `output` beats the whole-image run: binary PNM (P5/P6/P7) or PFM in, PNM or
// PFM out (the same bytes as write_image's), at least stream_above_bytes of input, the CPU backend, and at
// least four bands of about 8 MiB (an eighth of the image at most), each at least four times as tall as the
// pipeline's halo. Reads the input's
// header and plans the pipeline; never throws (a file the whole-image run refuses is left to it, to refuse
// in its own words).
FasterStreamed faster_streamed(const std::string& input, const std::string& output, const Pipeline& pipeline,
                               const StreamOptions& options);

// apron::stream_filter, where `resumable` false (a run apron chose to stream, not one asked for) keeps no
// journal, syncs no band before the end, and removes its partial file on any failure or signal, as the
// whole-image writer does its temporary file: never a file left for --resume that nobody asked for.
StreamReport stream_filter(const std::string& input, const std::string& output, const Pipeline& pipeline,
                           const StreamOptions& options, bool resumable);

}  // namespace apron::stream

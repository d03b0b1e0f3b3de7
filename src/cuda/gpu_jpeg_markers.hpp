#pragma once
// The markers of a JPEG file, walked on the CPU before nvJPEG sees its bytes (gpu_jpeg.cu): what the frame
// header says, whether the GPU decoder takes the file, and where the image ends. The checks are
// libjpeg-turbo's (jdmarker.c, jdhuff.c, jdphuff.c, jdinput.c), so that the GPU takes no file the CPU path
// refuses for its structure, and nvJPEG's parser reads nothing malformed.
#include <cstddef>
#include <cstdint>
#include <span>

#include "apron/image.hpp"

namespace apron::cuda::jpeg {

// What the segments read so far define (bit masks over the 4 slots): quantisation tables, Huffman tables and
// which of those are malformed (an error only for a scan that uses one, as in libjpeg-turbo). A sequential
// file's scan may use Huffman slots 0 and 1 undefined: libjpeg-turbo puts the standard tables there.
struct Tables {
    unsigned quant = 0;
    unsigned dc = 0, ac = 0, bad_dc = 0, bad_ac = 0;
};

// What the markers up to the first scan say.
struct FrameHeader {
    std::uint8_t marker = 0;  // 0xC0 baseline, 0xC1 extended sequential, 0xC2 progressive, ...
    int precision = 0;        // bits per sample
    int width = 0, height = 0, components = 0;
    // Of the first three components (more are refused): id, sampling factors, quantisation table.
    std::uint8_t id[3] = {}, h[3] = {}, v[3] = {}, quant[3] = {};
    bool jfif = false;         // an APP0 "JFIF" segment
    int adobe_transform = -1;  // an APP14 "Adobe" segment's colour transform, -1 without one
    Tables tables;
    // A progressive file's successive approximation so far, per component and coefficient (-1: none yet).
    signed char coefficient_bits[3][64];
    std::size_t scan_data = 0;  // where the first scan's entropy-coded data starts

    FrameHeader() {
        for (auto& component : coefficient_bits)
            for (signed char& bits : component) bits = -1;
    }
};

// Walks the markers from SOI to the end of the first scan's header. Returns nullptr, or why the file is not
// a JPEG image libjpeg-turbo would read.
const char* read_frame_header(std::span<const std::uint8_t> file, FrameHeader& frame);

// Why the GPU decoder leaves a file to the CPU, or nullptr when it takes it (gpu_jpeg.hpp lists the reasons;
// nvJPEG has the last word).
const char* refusal(const FrameHeader& frame);

// The decoded image: u8, 1 channel for gray, 3 for colour.
ImageShape shape_of(const FrameHeader& frame);

// Walks the rest, from the first scan's data: entropy-coded bytes, the segments between scans, EOI. Returns
// the offset just past EOI (what follows is not the image's, as for libjpeg-turbo), or 0 with `why` set.
std::size_t image_end(std::span<const std::uint8_t> file, FrameHeader& frame, const char*& why);

} // namespace apron::cuda::jpeg

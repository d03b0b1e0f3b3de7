// The marker walks of gpu_jpeg_markers.hpp, each check named after the libjpeg-turbo one it follows.
#include "cuda/gpu_jpeg_markers.hpp"

#include <cstring>

namespace apron::cuda::jpeg {

namespace {

// JPEG markers (ITU T.81, table B.1) the walks tell apart.
constexpr std::uint8_t TEM = 0x01, SOF0 = 0xC0, SOF1 = 0xC1, SOF2 = 0xC2, DHT = 0xC4, JPG = 0xC8, DAC = 0xCC,
                       RST0 = 0xD0, RST7 = 0xD7, SOI = 0xD8, EOI = 0xD9, SOS = 0xDA, DQT = 0xDB, DNL = 0xDC,
                       DRI = 0xDD, APP0 = 0xE0, APP14 = 0xEE, APP15 = 0xEF, COM = 0xFE;

constexpr int max_dimension = 65500;  // libjpeg-turbo's JPEG_MAX_DIMENSION

bool is_frame_marker(std::uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != DHT && m != JPG && m != DAC; }

// The markers with a segment (a length field) libjpeg-turbo reads; it refuses any other but the standalone
// ones (SOI, EOI, RSTn, TEM).
bool is_segment_marker(std::uint8_t m) {
    return is_frame_marker(m) || m == DHT || m == DAC || m == DQT || m == DRI || m == DNL || m == SOS || m == COM ||
           (m >= APP0 && m <= APP15);
}

std::size_t big_endian16(const std::uint8_t* p) { return std::size_t(p[0]) << 8 | p[1]; }

// A Huffman table's codes fit their lengths (no code of all ones), and a DC table's symbols are bit counts
// up to 15 (jdhuff.c, jpeg_make_d_derived_tbl).
bool usable_huffman_table(bool dc, const std::uint8_t* counts, const std::uint8_t* symbols, std::size_t n) {
    std::size_t longest = 0, code = 0;
    for (std::size_t length = 1; length <= 16; ++length)
        if (counts[length - 1]) longest = length;
    for (std::size_t length = 1; length <= longest; ++length) {
        code += counts[length - 1];
        if (code >= std::size_t(1) << length) return false;
        code <<= 1;
    }
    for (std::size_t i = 0; dc && i < n; ++i)
        if (symbols[i] > 15) return false;
    return true;
}

// DQT and DHT (jdmarker.c, get_dqt and get_dht).
const char* read_tables(std::uint8_t marker, const std::uint8_t* p, std::size_t bytes, Tables& tables) {
    while (bytes > 0) {
        const int kind = p[0] >> 4, slot = p[0] & 15;
        if (marker == DQT) {
            const std::size_t size = 1 + 64 * (kind ? 2 : 1);  // 16-bit values for any precision but 0
            if (slot > 3 || bytes < size) return "a bad quantisation table";
            tables.quant |= 1u << slot;
            p += size;
            bytes -= size;
            continue;
        }
        if (bytes < 17 || kind > 1 || slot > 3) return "a bad Huffman table";
        std::size_t symbols = 0;
        for (std::size_t length = 1; length <= 16; ++length) symbols += p[length];
        if (symbols > 256 || bytes < 17 + symbols) return "a bad Huffman table";
        (kind == 0 ? tables.dc : tables.ac) |= 1u << slot;
        unsigned& bad = kind == 0 ? tables.bad_dc : tables.bad_ac;
        if (usable_huffman_table(kind == 0, p + 1, p + 17, symbols))
            bad &= ~(1u << slot);
        else
            bad |= 1u << slot;
        p += 17 + symbols;
        bytes -= 17 + symbols;
    }
    return nullptr;
}

// Whether a scan can decode with Huffman table `slot` of a class (`defined`, `bad`: Tables' masks).
bool usable(int slot, unsigned defined, unsigned bad, bool sequential) {
    if (slot > 3) return false;
    if (!(defined & (1u << slot))) return sequential && slot < 2;  // jdhuff.c, jinit_huff_decoder
    return !(bad & (1u << slot));
}

// SOS (jdmarker.c get_sos, jdhuff.c and jdphuff.c start_pass, jdinput.c latch_quant_tables): 1-4 distinct
// components of the frame, a sequential file's full spectrum or a valid progression step (each coefficient
// refined one bit at a time after its first scan), and the tables the scan decodes with.
const char* read_scan_header(const std::uint8_t* p, std::size_t bytes, FrameHeader& frame) {
    const std::size_t n = bytes ? p[0] : 0;
    if (n < 1 || n > 4 || bytes != 4 + 2 * n) return "a bad scan header";
    // The rest for the files the GPU decoder may take: the others (refusal()) are the CPU's to judge.
    const bool huffman_dct = frame.marker == SOF0 || frame.marker == SOF1 || frame.marker == SOF2;
    if (!huffman_dct || frame.components > 3) return nullptr;
    const int first = p[1 + 2 * n], last = p[2 + 2 * n], high = p[3 + 2 * n] >> 4, low = p[3 + 2 * n] & 15;
    const bool progressive = frame.marker == SOF2, dc_band = first == 0;
    if (!progressive && (first != 0 || last != 63 || high != 0 || low != 0))
        return "progressive scan parameters in a sequential file";
    if (progressive && ((dc_band && last != 0) || (!dc_band && (last < first || last > 63 || n != 1)) || low > 13 ||
                        (high != 0 && low != high - 1)))
        return "a bad progression";
    unsigned seen = 0;
    for (std::size_t i = 0; i < n; ++i) {
        int c = 0;
        while (c < frame.components && c < 3 && frame.id[c] != p[1 + 2 * i]) ++c;
        if (c == frame.components || c == 3) return "a scan of a component the frame does not have";
        if (seen & (1u << c)) return "a component twice in one scan";
        seen |= 1u << c;
        if (frame.quant[c] > 3 || !(frame.tables.quant & (1u << frame.quant[c])))
            return "a component without its quantisation table";
        const int dc_table = p[2 + 2 * i] >> 4, ac_table = p[2 + 2 * i] & 15;
        const bool dc_needed = !progressive || (dc_band && high == 0), ac_needed = !progressive || !dc_band;
        const Tables& t = frame.tables;
        if ((dc_needed && !usable(dc_table, t.dc, t.bad_dc, !progressive)) ||
            (ac_needed && !usable(ac_table, t.ac, t.bad_ac, !progressive)))
            return "a scan without a usable Huffman table";
        if (!progressive) continue;
        signed char* bits = frame.coefficient_bits[c];
        if (!dc_band && bits[0] < 0) return "a bad progression (AC before DC)";
        for (int k = first; k <= last; ++k) {
            if (high != (bits[k] < 0 ? 0 : bits[k])) return "a bad progression";
            bits[k] = static_cast<signed char>(low);
        }
    }
    return nullptr;
}

// What a segment holds that a decoder reads beyond its length. nullptr, or why it is malformed.
const char* read_segment(std::uint8_t marker, const std::uint8_t* p, std::size_t bytes, FrameHeader& frame) {
    if (marker == DQT || marker == DHT) return read_tables(marker, p, bytes, frame.tables);
    if (marker == DRI && bytes != 2) return "a bad restart interval";
    if (marker == SOS) return read_scan_header(p, bytes, frame);
    return nullptr;
}

// SOFn (jdmarker.c, get_sof).
const char* read_frame(std::uint8_t marker, const std::uint8_t* p, std::size_t bytes, FrameHeader& frame) {
    if (bytes < 6 || bytes != 6 + 3 * std::size_t(p[5])) return "a frame header of the wrong length";
    frame.marker = marker;
    frame.precision = p[0];
    frame.height = int(big_endian16(p + 1));
    frame.width = int(big_endian16(p + 3));
    frame.components = p[5];
    for (int c = 0; c < frame.components && c < 3; ++c) {
        frame.id[c] = p[6 + 3 * c];
        frame.h[c] = p[7 + 3 * c] >> 4;
        frame.v[c] = p[7 + 3 * c] & 15;
        frame.quant[c] = p[8 + 3 * c];
    }
    return nullptr;
}

// libjpeg-turbo's guess of a 3-component file's colour space (jdapimin.c, default_decompress_parms): JFIF
// says YCbCr, else an Adobe transform 0 says RGB, else component ids 'R','G','B' say RGB; YCbCr otherwise.
bool read_as_ycbcr(const FrameHeader& frame) {
    if (frame.jfif) return true;
    if (frame.adobe_transform >= 0) return frame.adobe_transform != 0;
    return !(frame.id[0] == 'R' && frame.id[1] == 'G' && frame.id[2] == 'B');
}

} // namespace

// As libjpeg-turbo reads markers (jdmarker.c, next_marker and read_markers): bytes between markers and
// stuffed FF 00 pairs skipped, standalone markers passed over; apron's own test for a JPEG file first.
const char* read_frame_header(std::span<const std::uint8_t> f, FrameHeader& frame) {
    const std::size_t n = f.size();
    if (n < 4 || f[0] != 0xFF || f[1] != SOI || f[2] != 0xFF) return "not a JPEG file (no FF D8 FF at its start)";
    bool have_frame = false;
    for (std::size_t pos = 2;;) {
        while (pos < n && f[pos] != 0xFF) ++pos;
        while (pos < n && f[pos] == 0xFF) ++pos;
        if (pos >= n) return "the file ends before the image data";
        const std::uint8_t marker = f[pos++];
        if (marker == 0x00 || marker == TEM || (marker >= RST0 && marker <= RST7)) continue;
        if (marker == SOI) return "a second SOI marker";
        if (marker == EOI) return "EOI before the image data";
        if (!is_segment_marker(marker)) return "an unknown marker";
        if (n - pos < 2 || big_endian16(&f[pos]) > n - pos) return "a marker segment runs past the end of the file";
        if (big_endian16(&f[pos]) < 2) return "a marker segment shorter than its length field";
        const std::uint8_t* payload = f.data() + pos + 2;
        const std::size_t bytes = big_endian16(&f[pos]) - 2;
        pos += bytes + 2;
        if (is_frame_marker(marker)) {
            if (have_frame) return "a second frame header";
            if (const char* why = read_frame(marker, payload, bytes, frame)) return why;
            have_frame = true;
            continue;
        }
        if (marker == APP0 && bytes >= 14 && std::memcmp(payload, "JFIF", 5) == 0) frame.jfif = true;
        if (marker == APP14 && bytes >= 12 && std::memcmp(payload, "Adobe", 5) == 0)
            frame.adobe_transform = payload[11];
        if (marker == SOS && !have_frame) return "a scan before the frame header";
        if (const char* why = read_segment(marker, payload, bytes, frame)) return why;
        if (marker == SOS) {
            frame.scan_data = pos;
            return nullptr;
        }
    }
}

const char* refusal(const FrameHeader& frame) {
    if (frame.marker != SOF0 && frame.marker != SOF1 && frame.marker != SOF2)
        return "not a Huffman-coded DCT frame (lossless, hierarchical or arithmetic-coded)";
    if (frame.precision != 8) return "not 8 bits per sample";
    if (frame.width == 0 || frame.height == 0) return "no image size in the frame header";
    if (frame.width > max_dimension || frame.height > max_dimension) return "wider or taller than 65500";
    if (frame.components == 1)
        return frame.h[0] == 1 && frame.v[0] == 1 ? nullptr : "gray with sampling factors other than 1x1";
    if (frame.components != 3) return "neither 1 nor 3 components";
    if (!read_as_ycbcr(frame)) return "RGB components, not YCbCr";
    // 4:4:4, 4:2:2, 4:2:0, 4:4:0: the samplings libjpeg-turbo interpolates (it replicates 4:1:1's chroma).
    const bool chroma_full = frame.h[1] == 1 && frame.v[1] == 1 && frame.h[2] == 1 && frame.v[2] == 1;
    const bool luma_ok = frame.h[0] >= 1 && frame.h[0] <= 2 && frame.v[0] >= 1 && frame.v[0] <= 2;
    return chroma_full && luma_ok ? nullptr : "chroma sampling other than 4:4:4, 4:2:2, 4:2:0 or 4:4:0";
}

ImageShape shape_of(const FrameHeader& frame) {
    return ImageShape{frame.width, frame.height, frame.components == 1 ? 1 : 3, PixelType::u8};
}

// In entropy-coded data an FF byte is stuffed as FF 00; other FF pairs are fill bytes, RSTn or a marker.
// (RSTn out of order are left to the decoders: libjpeg-turbo passes over those after a scan's last MCU,
// and where that is only decoding tells.)
std::size_t image_end(std::span<const std::uint8_t> f, FrameHeader& frame, const char*& why) {
    const std::size_t n = f.size();
    for (std::size_t pos = frame.scan_data;;) {
        const void* next = pos < n ? std::memchr(f.data() + pos, 0xFF, n - pos) : nullptr;
        if (!next) break;
        pos = std::size_t(static_cast<const std::uint8_t*>(next) - f.data()) + 1;
        while (pos < n && f[pos] == 0xFF) ++pos;
        if (pos >= n) break;
        const std::uint8_t marker = f[pos++];
        if (marker == 0x00 || (marker >= RST0 && marker <= RST7)) continue;
        if (marker == EOI) return pos;
        if (!is_segment_marker(marker) || is_frame_marker(marker)) {
            why = "an unexpected marker inside the image data";
            return 0;
        }
        if (n - pos < 2 || big_endian16(&f[pos]) > n - pos) break;
        const std::size_t length = big_endian16(&f[pos]);
        if (length < 2) {
            why = "a marker segment shorter than its length field";
            return 0;
        }
        if ((why = read_segment(marker, f.data() + pos + 2, length - 2, frame))) return 0;
        pos += length;
    }
    why = "the file ends inside the image data (truncated)";
    return 0;
}

} // namespace apron::cuda::jpeg

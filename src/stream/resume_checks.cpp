// The checks of a streamed resume (resume_checks.hpp).
#include "stream/resume_checks.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <set>
#include <tuple>

#include "core/crc32.hpp"

namespace apron::stream {

// zlib's crc32() to the bit (checks stored before hold its CRCs), computed by core/crc32.
std::uint32_t crc_start() { return 0; }

std::uint32_t crc_of_rows(std::uint32_t crc, ConstImageView v) {
    for (int r = 0; r < v.height(); ++r) crc = crc32_update_fast(crc, v.row_bytes(r), v.shape.row_bytes());
    return crc;
}

std::uint32_t crc_of_input(io::RowSource& source, int first, int rows) {
    ImageShape s = source.shape();
    const int H = s.height;
    s.height = std::max(1, std::min(rows, int((std::size_t(4) << 20) / std::max<std::size_t>(1, s.row_bytes()))));
    Image chunk(s);
    std::uint32_t crc = crc_start();
    for (int r = 0; r < rows;) {
        const int g = ((first + r) % H + H) % H;
        const int n = std::min({rows - r, H - g, s.height});
        const ImageView v = chunk.view().roi(0, 0, s.width, n);
        source.read_rows(g, v);
        crc = crc_of_rows(crc, v);
        r += n;
    }
    return crc;
}

std::optional<std::uint32_t> crc_of_stored(const io::RowSink& sink, int y0, int y1) {
    const auto range = sink.stored_bytes(y0, y1);
    if (!range) return std::nullopt;
    std::vector<unsigned char> buffer(std::size_t(1) << 20);
    std::uint32_t crc = crc_start();
    for (std::uint64_t at = 0; at < range->size;) {
        const std::size_t n = std::size_t(std::min<std::uint64_t>(buffer.size(), range->size - at));
        if (!sink.read_back(range->offset + at, buffer.data(), n)) return std::nullopt;
        crc = crc32_update_fast(crc, buffer.data(), n);
        at += n;
    }
    return crc;
}

Fingerprint stream_fingerprint(const std::string& input, const std::string& output, const io::RowSource& source,
                               const Pipeline& pipeline, const ExecutionPlan& plan, const StreamOptions& o) {
    InputReading reading;
    reading.pnm_byte_order = o.pnm_byte_order == ByteOrder::little ? "little" : "big";
    reading.raw = o.raw;
    OutputStorage storage;
    const std::size_t dot = output.find_last_of('.'), slash = output.find_last_of('/');
    storage.format = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? "" : output.substr(dot + 1);
    for (char& c : storage.format) c = char(std::tolower(static_cast<unsigned char>(c)));
    storage.compression = o.compression;
    if (storage.format == "tif" || storage.format == "tiff") storage.tile_side = o.tile_side;
    if (storage.format == "raw") storage.byte_order = std::endian::native == std::endian::little ? "little" : "big";
    Fingerprint f = resume_fingerprint(pipeline, o.run, reading, storage);
    std::string steps = plan.describe(false);
    for (char& c : steps)
        if (c == '\n') c = '|';
    f.add("the plan", steps);
    struct stat st {};
    const std::string size = ::stat(input.c_str(), &st) == 0 ? std::to_string(st.st_size) + " bytes" : "unknown size";
    const ImageShape& in = source.shape();
    f.add("the input", size + ", " + std::to_string(in.width) + "x" + std::to_string(in.height) + "x" +
                           std::to_string(in.channels) + " " + to_string(in.type));
    return f;
}

std::vector<JournalEntry> check_entries(std::vector<JournalEntry> entries, const io::RowSink& sink, io::RowSource& source, std::vector<std::string>& notes) {
    const int H = source.shape().height;
    // Forward-only sources (PNG) decode best in increasing rows.
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        return std::tie(a.in_first, a.y0, a.rows) < std::tie(b.in_first, b.y0, b.rows);
    });
    std::vector<JournalEntry> kept;
    std::set<std::pair<int, int>> seen;
    int changed_output = 0, changed_input = 0;
    for (const auto& e : entries) {
        if (seen.count({e.y0, e.rows})) continue;
        const bool in_range = std::int64_t(e.y0) + e.rows <= std::int64_t(sink.shape().height) && e.in_rows <= H &&
                              e.in_first > -H && e.in_first < H;
        const std::optional<std::uint32_t> out = in_range ? crc_of_stored(sink, e.y0, e.y0 + e.rows) : std::nullopt;
        if (!out || *out != e.out_crc) {
            ++changed_output;
            continue;
        }
        if (crc_of_input(source, e.in_first, e.in_rows) != e.in_crc) {
            ++changed_input;
            continue;
        }
        seen.insert({e.y0, e.rows});
        kept.push_back(e);
    }
    auto bands = [](int n) { return std::to_string(n) + " band" + (n == 1 ? "" : "s"); };
    if (changed_output)
        notes.push_back(bands(changed_output) + " of the journal no longer match the partial file; recomputing their rows");
    if (changed_input)
        notes.push_back("the input changed since the journal (" + bands(changed_input) + "); recomputing the rows made from it");
    return kept;
}

std::vector<std::pair<int, int>> covered_rows(std::vector<JournalEntry> entries) {
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& c) { return a.y0 < c.y0; });
    std::vector<std::pair<int, int>> runs;
    for (const auto& e : entries) {
        if (!runs.empty() && e.y0 <= runs.back().second) runs.back().second = std::max(runs.back().second, e.y0 + e.rows);
        else runs.push_back({e.y0, e.y0 + e.rows});
    }
    return runs;
}

}  // namespace apron::stream

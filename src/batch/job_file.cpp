// GenConv job files: a four-line header (count, bits, largest size, padding) and then one image path per
// line. The reader is strict: a count that disagrees with the list is a mistake in the job, and finding it
// before any image is filtered is cheaper than finding it in the outputs.
#include "batch/job_file.hpp"

#include <charconv>
#include <climits>
#include <cstddef>
#include <optional>

#include "apron/errors.hpp"
#include "batch/text.hpp"
#include "io/file_io.hpp"

namespace apron::batch {

namespace {

constexpr long long max_count = 100'000'000;
constexpr long long max_side = 1 << 20;
constexpr std::size_t max_job_file_bytes = std::size_t(4) << 30;  // 100 million paths of ~40 bytes

// One header field per entry: what the line holds, for messages.
constexpr const char* header_names[] = {"image count", "bits per sample", "largest width and height",
                                        "padding x and y"};
constexpr std::size_t header_arity[] = {1, 1, 2, 2};

// A decimal integer with an optional sign; out-of-range values saturate so that the range checks that follow
// report them as too large rather than as not numbers.
std::optional<long long> to_integer(std::string_view token) {
    if (token.empty()) return std::nullopt;
    long long value = 0;
    const char* first = token.data();
    const char* last = first + token.size();
    if (*first == '+') ++first;  // from_chars takes '-' but not '+'
    if (first == last || (token.front() == '+' && (*first < '0' || *first > '9'))) return std::nullopt;
    const auto [end, ec] = std::from_chars(first, last, value);
    if (end != last) return std::nullopt;
    if (ec == std::errc::result_out_of_range) return token.front() == '-' ? LLONG_MIN : LLONG_MAX;
    if (ec != std::errc()) return std::nullopt;
    return value;
}

// The line's blank-separated integers when it holds exactly `arity` of them.
std::optional<std::vector<long long>> integers(std::string_view line, std::size_t arity) {
    std::vector<long long> values;
    std::size_t pos = 0;
    while (pos < line.size()) {
        while (pos < line.size() && text::is_blank(line[pos])) ++pos;
        std::size_t end = pos;
        while (end < line.size() && !text::is_blank(line[end])) ++end;
        if (end == pos) break;
        if (values.size() == arity) return std::nullopt;
        const auto v = to_integer(line.substr(pos, end - pos));
        if (!v) return std::nullopt;
        values.push_back(*v);
        pos = end;
    }
    if (values.size() != arity) return std::nullopt;
    return values;
}

// Lines that hold nothing for the parser: blank, or a '#' comment.
bool is_skipped(std::string_view line) {
    line = text::trim(line);
    return line.empty() || line.front() == '#';
}

class JobParser {
public:
    JobParser(std::string_view content, const std::string& name, const JobOptions& options)
        : lines_(text::split_lines(content)), name_(name), options_(options) {}

    JobFile parse() {
        JobFile job;
        const int count_line = read_header(job);
        read_paths(job, count_line);
        return job;
    }

private:
    [[noreturn]] void error(int line, const std::string& problem) const {
        throw Error(name_ + ":" + std::to_string(line) + ": " + problem);
    }

    // Reads the four header lines into `job`; returns the count's line number.
    int read_header(JobFile& job) {
        std::vector<long long> fields[4];
        int numbers[4] = {};
        for (int h = 0; h < 4; ++h) {
            while (next_ < lines_.size() && is_skipped(lines_[next_])) ++next_;
            if (next_ == lines_.size())
                error(std::max<int>(1, int(lines_.size())),
                      std::string("the file ends before the ") + header_names[h] +
                          " line (a GenConv job file starts with: count, bits, 'maxW maxH', 'padX padY')");
            numbers[h] = int(next_) + 1;
            const std::string_view line = text::trim(lines_[next_++]);
            auto values = integers(line, header_arity[h]);
            if (!values)
                error(numbers[h], std::string(header_names[h]) + ": expected " +
                                      (header_arity[h] == 1 ? "one integer" : "two integers") + ", found " +
                                      text::quoted(line));
            fields[h] = std::move(*values);
        }
        check_header(fields, numbers);
        job.count = int(fields[0][0]);
        job.bits = int(fields[1][0]);
        job.bits_line = numbers[1];
        job.max_width = int(fields[2][0]);
        job.max_height = int(fields[2][1]);
        job.pad_x = int(fields[3][0]);
        job.pad_y = int(fields[3][1]);
        return numbers[0];
    }

    void check_header(const std::vector<long long> (&f)[4], const int (&line)[4]) const {
        const long long count = f[0][0], bits = f[1][0], w = f[2][0], h = f[2][1], px = f[3][0], py = f[3][1];
        if (count < 0) error(line[0], "image count " + std::to_string(count) + " is negative");
        if (count > max_count)
            error(line[0],
                  "image count " + std::to_string(count) + " is over the limit of " + std::to_string(max_count));
        if (bits != 8 && bits != 16 && bits != 32)
            error(line[1], "bits per sample " + std::to_string(bits) + ": must be 8, 16 or 32");
        if (bits == 32 && options_.bits32 == JobBits32::int32)
            error(line[1], "bits per sample 32: a GenConv job's 32-bit samples are int32, which apron does not read "
                           "(it reads 8- and 16-bit integer and 32-bit float images); convert the images to 16-bit, "
                           "or to 32-bit float (PFM, TIFF) and pass --job-bits32 float");
        const std::string size = std::to_string(w) + " " + std::to_string(h);
        if (w < 1 || h < 1 || w > max_side || h > max_side)
            error(line[2], "largest width and height " + size + ": each must be 1 to " + std::to_string(max_side));
        const std::string pad = std::to_string(px) + " " + std::to_string(py);
        if (px < 0 || py < 0) error(line[3], "padding " + pad + ": must not be negative");
        // Compared as 64-bit: the padding is not range-checked yet and may be near LLONG_MAX.
        if (px >= (w + 1) / 2 || py >= (h + 1) / 2)
            error(line[3], "padding " + pad + " leaves no output of a " + std::to_string(w) + "x" + std::to_string(h) +
                               " image (twice the padding must be below the largest width and height)");
    }

    void read_paths(JobFile& job, int count_line) {
        int blank_after_path = 0;  // a blank line seen after a path: an error if another path follows
        // Never reserve `count` up front: the count is untrusted, the file's lines are what is there.
        job.paths.reserve(std::min<std::size_t>(std::size_t(job.count), lines_.size() - next_));
        for (; next_ < lines_.size(); ++next_) {
            const int number = int(next_) + 1;
            const std::string_view path = text::trim(lines_[next_]);
            if (!path.empty() && path.front() == '#') continue;  // a comment, wherever it is
            if (path.empty()) {
                if (!job.paths.empty() && !blank_after_path) blank_after_path = number;
                continue;
            }
            if (int(job.paths.size()) == job.count)
                error(number, "more image paths than the count of " + std::to_string(job.count) + " on line " +
                                  std::to_string(count_line) + " (first extra: " + text::quoted(path) + ")");
            if (blank_after_path)
                error(blank_after_path, "blank line inside the list of image paths (it would be an empty path)");
            if (path.find('\0') != std::string_view::npos) error(number, "image path holds a NUL byte");
            job.paths.emplace_back(path);
            job.path_lines.push_back(number);
        }
        if (int(job.paths.size()) < job.count)
            error(count_line, "the count says " + std::to_string(job.count) + " images but the file lists " +
                                  std::to_string(job.paths.size()));
    }

    std::vector<std::string_view> lines_;
    const std::string& name_;
    const JobOptions& options_;
    std::size_t next_ = 0;
};

} // namespace

JobFile parse_job_file(std::string_view content, const std::string& name, const JobOptions& options) {
    return JobParser(content, name, options).parse();
}

JobFile read_job_file(const std::string& path, const JobOptions& options) {
    return parse_job_file(io::read_file(path, "job file", max_job_file_bytes), path, options);
}

bool looks_like_job_file(std::string_view content) {
    // Two lines of one integer each (the count and the bits), after any blank and comment lines, start no
    // list of image paths (a list's comments are '#' lines too); whatever follows is then the job file's to judge, so a malformed header gets parse_job_file's message naming its line.
    std::size_t header = 0;
    for (std::string_view line : text::split_lines(content)) {
        if (is_skipped(line)) continue;
        line = text::trim(line);
        if (!integers(line, header_arity[header])) return false;
        if (++header == 2) return true;
    }
    return false;
}

} // namespace apron::batch
